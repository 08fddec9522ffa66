package rules

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/vocab"
)

// The check IDs are vocab's typed constants (issue 20 item 3); the
// catalogue (rules.Catalogue) says what each one checks. Both list the
// same IDs in the same order.
func TestCheckIDsAreTheCatalogue(t *testing.T) {
	var cat []vocab.CheckID
	for _, c := range Catalogue {
		cat = append(cat, vocab.CheckID(c.ID))
	}
	if !slices.Equal(cat, vocab.Checks) {
		t.Errorf("vocab.Checks = %v, want the catalogue's %v", vocab.Checks, cat)
	}
	for _, id := range vocab.Checks {
		if !id.Known() {
			t.Errorf("%s.Known() = false", id)
		}
	}
	if vocab.CheckID("BASE-10").Known() {
		t.Error(`"BASE-10".Known() = true`)
	}
}

// checkLiteral is a Go string literal holding a check ID and nothing else.
var checkLiteral = regexp.MustCompile(`"(?:BASE|STDIO|HTTP|AUTH|CORR|CAP|EVT|EFF|EDIT|COND|TAP)-[0-9]+"`)

// checkLiteralAllowed are the files that may write a check ID as a string
// literal: the two places that define them, and (until the sweep of issue
// 20 item 3 reaches them) the packages being rewritten. Remove an entry
// when its package imports vocab instead; the test then keeps it clean.
var checkLiteralAllowed = []string{
	"vocab/vocab.go",     // the constants themselves
	"rules/catalogue.go", // the catalogue rows
}

// No check-ID string literal outside the catalogue, vocab and tests: a new
// rule or package takes vocab's constants, so a renamed or mistyped ID is
// a compile error, not a finding under a check nobody reads.
func TestNoCheckIDLiterals(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skip("not in the repository")
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, a := range checkLiteralAllowed {
			if rel == a || strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a) {
				return nil
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if m := checkLiteral.FindString(code); m != "" {
				t.Errorf("%s:%d: check ID literal %s; use the vocab constant", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
