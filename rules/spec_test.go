package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func loadSharedSpec(t *testing.T) *Spec {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedAHP, "schema/draft/schema.json")); err != nil {
		t.Skipf("no shared AHP snapshot: %v", err)
	}
	s, err := LoadSpec(sharedAHP, "draft")
	if err != nil {
		t.Fatalf("LoadSpec(%s) = %v", sharedAHP, err)
	}
	return s
}

// specFindings checks one fixture file with only the spec rules.
func specFindings(t *testing.T, s *Spec, fixture string) []tap.Finding {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft", fixture))
	if err != nil {
		t.Fatal(err)
	}
	e := tap.NewEngine(tap.Config{Partial: true}, specRules(s))
	f := &tap.Frame{Transport: tap.File, Raw: data}
	f.Dir = GuessDirection(f)
	return e.Feed(f)
}

func TestSpecMapsFailuresToChecks(t *testing.T) {
	s := loadSharedSpec(t)
	for _, tc := range []struct {
		fixture string
		check   string // "" means no finding
		pointer string
	}{
		{"http/intercept-request.valid.json", "", ""},
		{"http/deny-response.valid.json", "", ""},
		{"http/error-response.valid.json", "", ""},
		{"http/capabilities-request.valid.json", "", ""},
		{"http/no-effect-response-version.invalid.json", "BASE-2", "/result/protocolVersion"},
		{"http/intercept-request-effects-missing.invalid.json", "CAP-1", "/params/capabilities/effects"},
		{"http/observe-tool-error-message-missing.invalid.json", "EVT-1", "/params/event/error/message"},
		{"http/message-wrong-role.invalid.json", "EDIT-1", "/params/event/items/0/role"},
		{"http/text-wrong-media-type.invalid.json", "EDIT-2", "/params/event/items/0/parts/0/mediaType"},
		{"http/flow-no-operation.invalid.json", "EFF-1", "/result/effects/1/operation"},
		{"http/error-response-result.invalid.json", "BASE-1", ""},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			fs := specFindings(t, s, tc.fixture)
			if tc.check == "" {
				if len(fs) > 0 {
					t.Errorf("valid fixture got findings: %v", fs)
				}
				return
			}
			found := false
			for _, f := range fs {
				if !strings.HasPrefix(f.Rule, "SPEC/") || f.Rule != "SPEC/"+f.Check {
					t.Errorf("finding %v: rule %q does not report under its own check", f, f.Rule)
				}
				if f.Check == tc.check && f.Pointer == tc.pointer && f.Level == tap.Error {
					found = true
				}
			}
			if !found {
				t.Errorf("findings = %v, want a %s error at %q", fs, tc.check, tc.pointer)
			}
		})
	}
}

// TestSpecCorpusValid: with --spec, no valid case gets a finding.
func TestSpecCorpusValid(t *testing.T) {
	s := loadSharedSpec(t)
	for _, c := range loadCorpus(t) {
		if !c.verdict() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(sharedAHP, c.Path))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range CheckDocument(c.Path, data, tap.Config{}, Options{Spec: s}) {
			if strings.HasPrefix(f.Rule, "SPEC/") {
				t.Errorf("valid case %s: %v", c.ID, f)
			}
		}
	}
}

// writeSchemaDir lays out a one-file snapshot under a temp dir.
func writeSchemaDir(t *testing.T, schema string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "schema", "draft")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"protocolVersion":"draft"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "schema.json"), []byte(schema), 0o600)
	return root
}

func TestLoadSpecOffline(t *testing.T) {
	// A $ref outside the directory must not be fetched.
	root := writeSchemaDir(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema",
		"$id":"https://example.invalid/schemas/draft/schema.json","$ref":"https://example.invalid/elsewhere.json"}`)
	if _, err := LoadSpec(root, "draft"); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("LoadSpec(remote $ref) = %v, want an offline-resolution error", err)
	}
	root = writeSchemaDir(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema",
		"$id":"https://example.invalid/schemas/draft/schema.json","type":"object","required":["jsonrpc"]}`)
	s, err := LoadSpec(root, "draft")
	if err != nil {
		t.Fatalf("LoadSpec(local) = %v", err)
	}
	e := tap.NewEngine(tap.Config{Partial: true}, specRules(s))
	fs := e.Feed(&tap.Frame{Dir: tap.FromHarness, Raw: []byte(`{"method":"x","id":1}`)})
	if len(fs) != 1 || fs[0].Check != "BASE-1" || fs[0].Pointer != "/jsonrpc" {
		t.Errorf("findings = %v, want one BASE-1 at /jsonrpc", fs)
	}
	if _, err := LoadSpec(root, "2026-01"); err == nil {
		t.Error("LoadSpec(missing snapshot) = nil error")
	}
}

func TestLoadSpecManifestDigest(t *testing.T) {
	root := writeSchemaDir(t, `{"$id":"https://example.invalid/schemas/draft/schema.json"}`)
	os.WriteFile(filepath.Join(root, "schema/draft/manifest.json"),
		[]byte(`{"protocolVersion":"draft","documents":[{"path":"schema/draft/schema.json","sha256":"00"}]}`), 0o600)
	if _, err := LoadSpec(root, "draft"); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("LoadSpec(bad digest) = %v, want a sha256 error", err)
	}
}

func TestSpecRegistration(t *testing.T) {
	s := loadSharedSpec(t)
	for fixture, wantErr := range map[string]bool{
		"registration/portable.valid.json":                  false,
		"registration/model-family-selection.valid.json":    false,
		"registration/empty-hooks.invalid.json":             true,
		"registration/content-default-missing.invalid.json": true,
	} {
		data, err := os.ReadFile(filepath.Join(sharedAHP, "fixtures/draft", fixture))
		if err != nil {
			t.Fatal(err)
		}
		reg, _, _ := tap.ParseJSON(data)
		fs := s.RegistrationFindings(reg)
		if (len(fs) > 0) != wantErr {
			t.Errorf("RegistrationFindings(%s) = %v, want errors: %v", fixture, fs, wantErr)
		}
		for _, f := range fs {
			if f.Check != "BASE-5" || f.Rule != "SPEC/BASE-5" || f.Level != tap.Error {
				t.Errorf("%s: finding %+v, want a SPEC/BASE-5 error", fixture, f)
			}
		}
	}
	var none *Spec
	if none.RegistrationFindings(nil) != nil {
		t.Error("a nil Spec must report nothing")
	}
}

// FuzzSpec: any message through the --spec rules gives findings under
// catalogue checks, never a panic.
func FuzzSpec(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(sharedAHP, "fixtures/draft/http/*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"effects":[{"type":{"x":1}}]}}`))
	if _, err := os.Stat(filepath.Join(sharedAHP, "schema/draft/schema.json")); err != nil {
		f.Skip("no shared AHP snapshot")
	}
	s, err := LoadSpec(sharedAHP, "draft")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := tap.NewEngine(tap.Config{Partial: true}, specRules(s))
		fr := &tap.Frame{Transport: tap.File, Raw: data}
		fr.Dir = GuessDirection(fr)
		for _, fd := range e.Feed(fr) {
			if _, ok := CheckByID(fd.Check); !ok || fd.Check == "TAP-2" {
				t.Fatalf("finding %+v on %q", fd, data)
			}
		}
		if reg, _, err := tap.ParseJSON(data); err == nil {
			s.RegistrationFindings(reg)
		}
	})
}
