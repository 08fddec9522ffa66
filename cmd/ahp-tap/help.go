package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// synopses are the first lines of each command's help: how to call it and
// what it does. Flags follow, printed by printFlags.
var synopses = map[string]string{
	"check": `usage: ahp-tap check [flags] FILE...
Check standalone files: captures, NDJSON streams, single messages and registration documents,
recognised by content (gzip is read transparently; a violation log is refused). "-" reads stdin.
Exit 0: no finding at or above --fail-on; 1: some; 2: usage error or an input not checked whole
(unreadable, not traffic, empty without --allow-empty, damaged records); 3: both 1 and 2.`,
	"replay": `usage: ahp-tap replay [flags] CAPTURE...
Re-check recorded traffic (captures written by 'stdio --capture' or 'http --capture', or plain
NDJSON stdio streams) as the live run did. Accepts the same inputs as 'check'; exit codes as 'check'.`,
	"diff": `usage: ahp-tap diff [flags] A B
Compare two captures: exchanges matched by event identity, what changed in each answer (effects,
outcome, edits; latency with --latency), and which findings are new or gone (docs/diff.md).
Exit 0: equal; 1: a difference; 2: usage error or an input that is not a capture.`,
	"view": `usage: ahp-tap view [flags] CAPTURE...
Open recordings in the HTML report's conversation view: replay the captures (as 'replay' does) into
one self-contained page, write it to a new 0600 file and print its path; with --listen ADDR, also
serve it on loopback until interrupted. Exit 0: the page was written (findings included); 2: usage
error or an input that is not traffic.`,
	"stdio": `usage: ahp-tap stdio [flags] -- CMD [ARGS...]
Wrap a stdio backend: start CMD (no shell), forward stdin, stdout and stderr byte for byte, audit a
copy, and exit with the backend's status. Standard error is shared with the backend: --console
findings appear among its lines. A --log that cannot be opened is said once on stderr and the tap
runs without a log (it never stands between the harness and its backend).`,
	"http": `usage: ahp-tap http [flags] (--upstream URL | --forward)
Reverse (or forward) proxy in front of an HTTP backend; every body is forwarded unchanged and
audited off the forwarding path. A --log or --capture that cannot be opened is exit 2 at start.`,
	"demo":            "usage: ahp-tap demo [flags]\nRun an example harness and backend through a live stdio tap and print the findings.",
	"rules":           "usage: ahp-tap rules [flags]\nList every check and rule: ID, requirement, level, one line.",
	"tail":            "usage: ahp-tap tail [flags] LOG...\nPrint a violation log (--log) as readable lines; with -f, follow it as it grows (a log that does not\nexist yet is waited for, as tail -F does). A capture or a stream of messages is refused (exit 2).",
	"example-backend": "usage: ahp-tap example-backend [flags]\nAn example AHP backend on stdio (or over HTTP with --listen), with known faults per --mode, for testing a harness.",
	"example-harness": "usage: ahp-tap example-harness [flags] [CMD [ARGS...]]\nAn example AHP harness that plays a short session: against CMD (once, or once per message with\n--lifecycle per_event), on stdin/stdout, or over HTTP to --url.",
	"ca": `usage: ahp-tap ca init DIR
Create a CA for HTTPS interception ('http --forward --mitm-ca DIR') in DIR (files 0600).
Whoever trusts its certificate lets the holder of its key read and change all their HTTPS traffic:
trust it only in the harness under test, never system-wide.`,
	"version": "usage: ahp-tap version\nPrint the version.",
	"wrap":    "usage: ahp-tap wrap --dir DIR [-o FILE] REGISTRATION\nPut ahp-tap in front of every backend of a registration.",
	"unwrap":  "usage: ahp-tap unwrap [flags] REGISTRATION\nTake ahp-tap out of a wrapped registration again.",
	"help":    "usage: ahp-tap help [COMMAND]\nList the commands, or show COMMAND's help.",
	"mock":    mockUsage + "\nServe (mock backend) or play (mock harness) one side of a capture, audited ('ahp-tap mock backend --help' and 'ahp-tap mock harness --help' list their flags).",
	"mock backend": `usage: ahp-tap mock backend [flags] (--stdio | --listen ADDR) CAPTURE
Answer a harness from a recorded capture, as its backend (on stdin/stdout, or over HTTP), and audit
the traffic. Exit 1 when a request went unmatched or a finding reaches --fail-on (docs/mock.md).`,
	"mock harness": `usage: ahp-tap mock harness [flags] CAPTURE -- BACKEND [ARGS...]
       ahp-tap mock harness [flags] --url URL CAPTURE
Play a capture's harness messages to a live backend (one BACKEND process for the session, or one
per message when the hook's lifecycle is per_event) and compare every answer with the recording.
Exit 1 when an answer differs or a finding reaches --fail-on (docs/mock.md).`,
}

// isHelpFlag reports whether arg asks for help.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "--help", "-help":
		return true
	}
	return false
}

// wantsHelp reports whether args ask for help before "--" (after it, the
// arguments are a backend's). For a command that runs another (stdio,
// example-harness) the scan also stops at the first argument that is not a
// flag: what follows may be the other program's.
func wantsHelp(cmd string, args []string) bool {
	runsCommand := cmd == "stdio" || cmd == "example-harness"
	for _, a := range args {
		if a == "--" || (runsCommand && !strings.HasPrefix(a, "-")) {
			return false
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// printHelp writes cmd's synopsis and, when fs is not nil, its flags.
func printHelp(w io.Writer, cmd string, fs *flag.FlagSet) {
	if s, ok := synopses[cmd]; ok {
		fmt.Fprintln(w, s)
	} else {
		fmt.Fprintf(w, "usage of ahp-tap %s:\n", cmd)
	}
	if fs != nil {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs)
	}
}

// printFlags lists fs's flags in the style of the docs: --name VALUE, the
// help text on the next line, the default when it is not the zero value.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // -f, -o, -v: one letter, one dash, as usual
		}
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
			// On the first line: after a list of values (--mode), the
			// last line is one value's, and the default there reads as
			// that value's (issue 21 item 13).
			first, more, multi := strings.Cut(usage, "\n")
			if multi && strings.HasSuffix(first, ":") {
				first = strings.TrimSuffix(first, ":") + fmt.Sprintf(" (default %s):", def)
			} else {
				first += fmt.Sprintf(" (default %s)", def)
			}
			if multi {
				usage = first + "\n" + more
			} else {
				usage = first
			}
		}
		usage = strings.ReplaceAll(usage, "\n", "\n      ")
		fmt.Fprintf(w, "      %s\n", usage)
	})
}
