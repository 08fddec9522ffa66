package auditlink

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
)

// SharedKey is the rendezvous key of a shared audit process: a short hash
// of everything its work depends on (the tool's version and executable,
// the working directory, the taps' flags, the registration's bytes, the
// OTLP exporter's settings), so that taps configured differently never
// share one.
func SharedKey(version string, flagArgs []string, registration string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "ahp-tap %s\x00", version)
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", exe, st.Size(), st.ModTime().UnixNano())
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%d\x00", cwd, len(flagArgs))
	for _, a := range flagArgs {
		fmt.Fprintf(h, "%s\x00", a)
	}
	if registration != "" {
		data, err := os.ReadFile(registration)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
	}
	env := os.Environ()
	slices.Sort(env)
	for _, e := range env {
		if strings.HasPrefix(e, "OTEL_") { // the OTLP exporter's settings
			fmt.Fprintf(h, "%s\x00", e)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}
