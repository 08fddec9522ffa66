package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExpandInputs replaces each directory among names by the captures in it
// (files named *.capture or *.capture.gz, as `wrap --dir` writes them),
// in name order. A directory with none is an error.
func ExpandInputs(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		st, err := os.Stat(n)
		if n == "-" || err != nil || !st.IsDir() {
			out = append(out, n)
			continue
		}
		ents, err := os.ReadDir(n)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, e := range ents {
			name := e.Name()
			if e.Type().IsRegular() && (strings.HasSuffix(name, ".capture") || strings.HasSuffix(name, ".capture.gz")) {
				out = append(out, filepath.Join(n, name))
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("%s is a directory with no capture in it (*.capture, *.capture.gz)", n)
		}
	}
	return out, nil
}
