package main

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var backticked = regexp.MustCompile("`([A-Za-z][A-Za-z0-9_.]*)`")

// documentedFields reads the field tables of a doc page: the names in the
// first column of each table whose header starts "| field", and, for a row
// of an object, the `names` in its meaning column as "row.name". always
// lists the fields whose "always" column says yes (log-format.md).
func documentedFields(t *testing.T, page string) (fields map[string]bool, always []string) {
	t.Helper()
	f, err := os.Open("../../docs/" + page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fields = map[string]bool{}
	inTable, alwaysCol := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		if strings.TrimSpace(cols[0]) == "field" {
			inTable, alwaysCol = true, len(cols) > 1 && strings.TrimSpace(cols[1]) == "always"
			continue
		}
		if !inTable || strings.HasPrefix(strings.TrimSpace(cols[0]), "---") {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cols[0], -1) {
			name := m[1]
			fields[name] = true
			if alwaysCol && strings.TrimSpace(cols[1]) == "yes" {
				always = append(always, name)
			}
			if len(cols) > 2 && strings.Contains(cols[1], "object") {
				for _, sub := range backticked.FindAllStringSubmatch(cols[2], -1) {
					fields[name+"."+sub[1]] = true
				}
			}
		}
	}
	return fields, always
}

// recordFields lists the field names of a JSON Lines file's records, one
// level into the objects named in nested ("http", "note.http": "a.b").
func recordFields(t *testing.T, data []byte, nested ...string) []map[string]bool {
	t.Helper()
	var out []map[string]bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		names := map[string]bool{}
		var walk func(prefix string, m map[string]any)
		walk = func(prefix string, m map[string]any) {
			for k, v := range m {
				names[prefix+k] = true
				if sub, ok := v.(map[string]any); ok && slices.Contains(nested, prefix+k) {
					walk(prefix+k+".", sub)
				}
			}
		}
		walk("", rec)
		out = append(out, names)
	}
	return out
}

// checkCaptureDoc checks that every field of every record in a real capture
// is documented in docs/capture-format.md, and that HTTP frames carry seq.
func checkCaptureDoc(t *testing.T, capData []byte) {
	t.Helper()
	doc, _ := documentedFields(t, "capture-format.md")
	for i, rec := range recordFields(t, capData, "http", "framing", "note", "note.http") {
		for name := range rec {
			if !doc[name] {
				t.Errorf("capture record %d has field %q, not documented in docs/capture-format.md", i+1, name)
			}
		}
		if rec["type"] && rec["http"] && !rec["seq"] {
			t.Errorf("capture record %d: an HTTP frame without seq", i+1)
		}
	}
}

// checkLogDoc checks that every field of every record in a real violation
// log is documented in docs/log-format.md and that the "always" ones are
// in each.
func checkLogDoc(t *testing.T, logData []byte) {
	t.Helper()
	doc, always := documentedFields(t, "log-format.md")
	if len(always) < 5 {
		t.Fatalf("docs/log-format.md: found only %v as always present", always)
	}
	for i, rec := range recordFields(t, logData) {
		for name := range rec {
			if !doc[name] {
				t.Errorf("log record %d has field %q, not documented in docs/log-format.md", i+1, name)
			}
		}
		for _, name := range always {
			if !rec[name] {
				t.Errorf("log record %d lacks %q, documented as always present", i+1, name)
			}
		}
	}
}

// The docs describe the records the tools write (issue 15 item 12): the
// example capture and the log its replay writes (HTTP records are checked
// in TestHTTPCommandEndToEnd).
func TestDocsMatchRecords(t *testing.T) {
	t.Parallel()
	capData, err := os.ReadFile(exampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	checkCaptureDoc(t, capData)
	logPath := writeFile(t, "v.log", "")
	if r := runTap(t, "", "replay", "--log", logPath, exampleCapture); r.code != 1 {
		t.Fatalf("replay: exit %d %s", r.code, r.stderr)
	}
	logData, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	checkLogDoc(t, logData)
}
