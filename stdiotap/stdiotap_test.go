package stdiotap

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ahp-tap/ahp-tap/auditlink"
	"github.com/ahp-tap/ahp-tap/internal/linkconf"
	"github.com/ahp-tap/ahp-tap/internal/norace"
	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// TestMain lets the test binary be the processes a tap starts of itself,
// as ahp-tap is: its watchdog and its audit process (with --log only).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "__watchdog":
			os.Exit(stdio.Watchdog(os.Stdin))
		case WorkerCommand:
			fs := flag.NewFlagSet(WorkerCommand, flag.ExitOnError)
			conn := fs.String("audit-conn", "", "")
			fd := fs.Int("audit-fd", auditlink.LinkFD, "")
			ready := fs.Int("ready-fd", -1, "")
			log := fs.String("log", "", "")
			_ = fs.Parse(os.Args[2:])
			c := testConfig(*log)
			if err := RunAuditProcess(c, *conn, *fd, *ready); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			os.Exit(0)
		}
	}
	norace.QuickExit() // race-built children: no 1 s sleep at exit
	os.Exit(m.Run())
}

const request = `{"jsonrpc":"2.0","id":"e1","method":"hooks/intercept","params":{"protocolVersion":"draft","event":{"id":"e1"}}}`

// testConfig is a tap without a registration, logging to log.
func testConfig(log string) Config {
	return Config{Version: "test", Files: linkconf.Files{Snapshot: tap.DefaultSnapshot}, Log: log,
		MaxLine: 1 << 20, Queue: 1024, Budget: 64 << 20, Priority: stdio.PriorityLow, Drain: 5 * time.Second,
		Stderr: os.Stderr, Diag: os.Stderr}
}

// runTap runs a backend answering one line with answer behind Run, the
// audit in process (complete) or in an audit process, and returns what
// the harness got and the violation log.
func runTap(t *testing.T, answer string, inProcess bool) (got, log string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	logPath := filepath.Join(t.TempDir(), "v.log")
	l, err := linkconf.Load(linkconf.Files{Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	c := testConfig(logPath)
	c.Stderr, c.Diag = stderr, stderr
	c.Link, c.Complete = l, inProcess
	c.FlagArgs = []string{"--log", logPath}
	c.Argv = []string{sh, "-c", "read line; printf '%s\\n' '" + answer + "'"}
	c.Stdin, c.Stdout = strings.NewReader(request+"\n"), &out
	status, err := Run(context.Background(), c)
	if err != nil || status != 0 {
		t.Fatalf("Run = %d, %v", status, err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	diag, _ := os.ReadFile(stderr.Name())
	if strings.Contains(string(diag), "cannot start the audit process") {
		t.Errorf("the audit process did not start: %s", diag)
	}
	if st, err := os.Stat(logPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, %v; want 0600", st, err)
	}
	return out.String(), string(data)
}

func TestRunForwardsAndAudits(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		finding      bool
	}{
		{"conforming", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"draft","effects":[{"type":"allow"}]}}`, false},
		{"wrong version", `{"jsonrpc":"2.0","id":"e1","result":{"protocolVersion":"2025-06","effects":[{"type":"allow"}]}}`, true},
	} {
		for _, inProcess := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/in-process=%v", c.name, inProcess), func(t *testing.T) {
				got, log := runTap(t, c.answer, inProcess)
				if got != c.answer+"\n" {
					t.Errorf("the harness got %q, want the backend's bytes", got)
				}
				if has := strings.Contains(log, `"check":"BASE-2"`); has != c.finding {
					t.Errorf("BASE-2 in the log = %v, want %v; log:\n%s", has, c.finding, log)
				}
			})
		}
	}
}

func TestRunReturnsTheBackendsStatus(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	l, err := linkconf.Load(linkconf.Files{Snapshot: tap.DefaultSnapshot})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{0, 3} {
		c := testConfig("")
		c.Link, c.AuditOff = l, true
		c.Argv = []string{sh, "-c", fmt.Sprintf("exit %d", want)}
		c.Stdin, c.Stdout = strings.NewReader(""), &bytes.Buffer{}
		if got, err := Run(context.Background(), c); got != want || err != nil {
			t.Errorf("backend exit %d: Run = %d, %v", want, got, err)
		}
	}
	c := testConfig("")
	c.Link, c.AuditOff = l, true
	c.Argv = []string{filepath.Join(t.TempDir(), "no-such-backend")}
	c.Stdin, c.Stdout = strings.NewReader(""), &bytes.Buffer{}
	var se *stdio.StartError
	if _, err := Run(context.Background(), c); err == nil || !errors.As(err, &se) {
		t.Errorf("a backend that cannot start: Run error %v, want a *stdio.StartError", err)
	}
}

func TestLinkBacklog(t *testing.T) {
	c := &Config{Queue: 16, Budget: 64 << 20}
	if got := linkBacklog(c); got != 32<<20 {
		t.Errorf("linkBacklog(default queue) = %d, want half the budget", got)
	}
	c.QueueSet = true
	if got := linkBacklog(c); got != 16*2048 {
		t.Errorf("linkBacklog(--audit-queue 16) = %d, want 16 frames of 2 KiB", got)
	}
}
