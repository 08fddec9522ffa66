package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ahp-tap/ahp-tap/internal/e2e"
)

func init() {
	// respond answers every request line with a conforming result
	// carrying its id; with "once" it answers one line and exits
	// (per_event).
	helpers["respond"] = func(args []string) int {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
		w := bufio.NewWriter(os.Stdout)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"draft","effects":[]}}`+"\n", m.ID)
			w.Flush()
			if len(args) > 0 && args[0] == "once" {
				return 0
			}
		}
		return 0
	}
}

// stdioTap is `ahp-tap stdio FLAGS -- <helper respond ARGS>`, the tap
// being the built binary (fast, not race-instrumented) and the backend
// the test binary.
func stdioTap(flags []string, helperArgs ...string) *exec.Cmd {
	argv := append([]string{"stdio"}, flags...)
	argv = append(argv, "--", childBinary, "helper", "respond")
	argv = append(argv, helperArgs...)
	cmd := exec.Command(tapBinary, argv...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	return cmd
}

// intercept is a conforming intercept request for event id with a tool
// command (a retry with another command is a changed retry, BASE-6).
func intercept(id, command string) string {
	return `{"jsonrpc":"2.0","id":"` + id + `","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"` + id +
		`","source":"urn:x","type":"tool.before","time":"2026-01-01T00:00:00Z","harness":{"name":"h","version":"1"},"session":{"id":"s1"},"tool":{"name":"Bash","kind":"shell","origin":"native","input":{"command":"` +
		command + `"}},"call":{"id":"c-` + id + `"},"path":"native"},"capabilities":{"effects":["deny"]}}}`
}

// TestLiveAndReplayAgree runs the same traffic through every live way in
// (stdio, per_event stdio processes sharing --state, http), with a
// capture and a violation log, replays each capture, and requires the
// replay's findings to be the live run's, record for record: drops under a
// tiny audit queue (TAP-1, and no CORR-2 for the answers of dropped
// requests), the registration's findings with --spec, retries judged
// across processes.
func TestLiveAndReplayAgree(t *testing.T) {
	e2e.Only(t)
	t.Parallel()
	regPath := fixture(t, "registration/observe-policy-fields.invalid.json") // per_event stdio hook; has BASE-5 and SPEC findings
	const hook = "com.example.observer"
	cases := []struct {
		name       string
		live       func(t *testing.T, logPath, capPath string)
		replayArgs []string
		want       []string // substrings of the live log, to know the case exercised what it claims
	}{
		{
			name: "stdio tiny audit queue drops",
			live: func(t *testing.T, logPath, capPath string) {
				var in strings.Builder
				for i := range 20000 {
					in.WriteString(intercept(fmt.Sprintf("e%d", i), "ls") + "\n")
				}
				cmd := stdioTap([]string{"--audit-queue", "1", "--lifecycle", "persistent", "--log", logPath, "--capture", capPath})
				cmd.Stdin = strings.NewReader(in.String())
				if out, err := cmd.Output(); err != nil {
					t.Fatalf("ahp-tap stdio: %v (%d bytes out)", err, len(out))
				}
			},
			want: []string{`"check":"TAP-1"`, `frames not audited`},
		},
		{
			name: "stdio registration with --spec",
			live: func(t *testing.T, logPath, capPath string) {
				cmd := stdioTap([]string{"--registration", regPath, "--hook", hook, "--spec", sharedAHP, "--timeout", "5s",
					"--log", logPath, "--capture", capPath}, "once")
				cmd.Stdin = strings.NewReader(intercept("e1", "ls") + "\n" + `{"jsonrpc":"2.0","id":"x","method":"hooks/bogus"}` + "\n")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("ahp-tap stdio: %v\n%s", err, out)
				}
			},
			replayArgs: []string{"--spec", sharedAHP},
			want:       []string{`"rule":"BASE-5/registration"`, `"rule":"SPEC/BASE-5"`},
		},
		{
			name: "per_event processes sharing --state",
			live: func(t *testing.T, logPath, capPath string) {
				state := filepath.Join(filepath.Dir(capPath), "state")
				for i, command := range []string{"ls", "rm -rf /", "ls"} {
					id := "evt_7"
					if i == 2 {
						id = "evt_8"
					}
					cmd := stdioTap([]string{"--registration", regPath, "--hook", hook, "--state", state,
						"--log", logPath, "--capture", capPath}, "once")
					cmd.Stdin = strings.NewReader(intercept(id, command) + "\n")
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("process %d: %v\n%s", i+1, err, out)
					}
				}
			},
			want: []string{`"check":"BASE-6"`, `"rule":"BASE-5/registration"`},
		},
		{
			name: "http registration with --spec",
			live: func(t *testing.T, logPath, capPath string) {
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					switch r.URL.Path {
					case "/observe":
						w.WriteHeader(202)
						return
					case "/fail":
						http.Error(w, "backend down", 500)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[{"type":"deny","reason":"no"}]}}`)
				}))
				defer up.Close()
				lt := startHTTPTap(t, "--upstream", up.URL, "--registration", regPath, "--hook", hook, "--spec", sharedAHP,
					"--log", logPath, "--capture", capPath)
				addr := lt.waitFor(t, "listening on", "http://")
				for _, p := range []struct{ path, body string }{
					{"/", intercept("e1", "ls")},
					{"/", intercept("e2", "ls")}, // answered with id e1: unsolicited
					{"/observe", `{"jsonrpc":"2.0","method":"hooks/observe","params":{"protocolVersion":"draft","event":{"id":"o1"}}}`},
					{"/fail", intercept("e3", "ls")},
				} {
					resp, err := http.Post("http://"+addr+p.path, "application/json", strings.NewReader(p.body))
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				lt.cmd.Process.Signal(syscall.SIGTERM)
				<-lt.done
				if err := lt.cmd.Wait(); err != nil {
					t.Fatalf("ahp-tap http: %v\n%s", err, lt.stderrText())
				}
			},
			replayArgs: []string{"--spec", sharedAHP},
			want:       []string{`"rule":"BASE-5/registration"`, `"rule":"SPEC/BASE-5"`, `"check":"HTTP-2"`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath, capPath, replayLog := filepath.Join(dir, "live.log"), filepath.Join(dir, "cap.jsonl"), filepath.Join(dir, "replay.log")
			c.live(t, logPath, capPath)
			args := append([]string{"replay", "--log", replayLog, "--fail-on", "never"}, c.replayArgs...)
			if r := runTap(t, "", append(args, capPath)...); r.code != 0 {
				t.Fatalf("replay: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			live, replayed := logRecords(t, logPath), logRecords(t, replayLog)
			liveText := strings.Join(live, "\n")
			for _, w := range c.want {
				if !strings.Contains(liveText, w) {
					t.Errorf("the live run has no %s; the case does not exercise what it claims:\n%.3000s", w, liveText)
				}
			}
			if liveText != strings.Join(replayed, "\n") {
				t.Errorf("replay differs from the live run:\n%s", diffLines(live, replayed))
			}
		})
	}
}

// diffLines lists the lines only in a (-) or only in b (+), both sorted.
func diffLines(a, b []string) string {
	var out strings.Builder
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	shown := 0
	for l, n := range count {
		if n == 0 || shown > 40 {
			continue
		}
		shown++
		sign := "-live   "
		if n < 0 {
			sign, n = "+replay ", -n
		}
		fmt.Fprintf(&out, "%s x%d %.400s\n", sign, n, l)
	}
	return out.String()
}
