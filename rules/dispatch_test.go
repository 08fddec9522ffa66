package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// TestRegistrationFixtures runs every registration case of the shared
// corpus through RegistrationFindings.
func TestRegistrationFixtures(t *testing.T) {
	n := 0
	for _, c := range loadCorpus(t) {
		if c.Binding != "registration-json" {
			continue
		}
		n++
		t.Run(c.ID, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(sharedAHP, c.Path))
			if err != nil {
				t.Fatal(err)
			}
			reg, _, err := tap.ParseJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			fs := RegistrationFindings(reg)
			if got := len(fs) == 0; got != c.verdict() {
				t.Errorf("valid = %v, want %v; findings:%s", got, c.verdict(), dump(fs))
			}
		})
	}
	if n == 0 {
		t.Error("no registration cases in the corpus")
	}
}

// validRegistration is a registration every test case edits one piece of.
const validRegistration = `{"protocolVersion":"draft","hooks":[
 {"id":"com.example.policy","transport":{"type":"http","url":"https://policy.example.com/agent-hooks"},
  "authentication":{"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"},
  "subscriptions":[{"events":["tool.before","model.*"],"mode":"intercept","timeoutMs":750,"failurePolicy":"fail-closed","content":{"default":"metadata","text":"body","custom":"omit"}}]},
 {"id":"com.example.local_review","transport":{"type":"stdio","command":"/usr/local/bin/review","args":["serve"],"lifecycle":"persistent"},
  "subscriptions":[{"events":["*"],"mode":"observe","includeNative":false,"content":{"default":"omit"},"scope":"managed","disableable":false,
   "upload":{"endpoint":"http://127.0.0.1:8080/up","timeoutMs":100,"maxBytes":0}}]}]}`

func TestRegistration(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // replace old with new in validRegistration
		want     int
	}{
		{"valid", "", "", 0},
		{"unknown fields are ignored", `"protocolVersion":"draft",`, `"protocolVersion":"draft","x-comment":"hi",`, 0},
		{"other snapshot", `"protocolVersion":"draft"`, `"protocolVersion":"0.1"`, 1},
		{"no hooks", `"hooks":[`, `"hookz":[`, 1},
		{"backend id not reverse-DNS", `"com.example.policy"`, `"policy"`, 1},
		{"duplicate backend id", `"com.example.local_review"`, `"com.example.policy"`, 1},
		{"stdio with authentication", `"lifecycle":"persistent"},`, `"lifecycle":"persistent"},"authentication":{"type":"bearer","tokenRef":"vault:x"},`, 1},
		{"unknown lifecycle", `"persistent"`, `"forever"`, 1},
		{"http url relative", `"https://policy.example.com/agent-hooks"`, `"/agent-hooks"`, 1},
		{"unknown transport", `"type":"http"`, `"type":"grpc"`, 1},
		{"tokenEnv and tokenRef", `"tokenEnv":"AHP_POLICY_TOKEN"`, `"tokenEnv":"AHP_POLICY_TOKEN","tokenRef":"vault:x"`, 1},
		{"tokenEnv not a variable name", `"AHP_POLICY_TOKEN"`, `"AHP-TOKEN"`, 1},
		{"literal token", `"tokenEnv":"AHP_POLICY_TOKEN"`, `"tokenEnv":"AHP_POLICY_TOKEN","token":"s3cr3t"`, 1},
		{"mtls is not portable", `"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"`, `"type":"mtls","cert":"x"`, 1},
		{"oauth ok", `"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"`, `"type":"oauth","issuer":"https://id.example","resource":"https://policy.example.com","clientId":"c","flow":"client_credentials"`, 0},
		{"oauth issuer http", `"type":"bearer","tokenEnv":"AHP_POLICY_TOKEN"`, `"type":"oauth","issuer":"http://id.example","resource":"r","clientId":"c","flow":"client_credentials"`, 1},
		{"contentReceiver", `"subscriptions":[{"events":["*"]`, `"contentReceiver":{},"subscriptions":[{"events":["*"]`, 1},
		{"intercept without timeout", `"timeoutMs":750,`, ``, 1},
		{"intercept timeout zero", `"timeoutMs":750`, `"timeoutMs":0`, 1},
		{"intercept without policy", `"failurePolicy":"fail-closed",`, ``, 1},
		{"intercept unknown policy", `"fail-closed"`, `"fail-soft"`, 1},
		{"intercept of an observe-only event", `"tool.before","model.*"`, `"tool.before","turn.end"`, 1},
		{"unknown event name", `"tool.before","model.*"`, `"tool.before","tool.error"`, 1},
		{"bad wildcard", `"tool.before","model.*"`, `"tool.before","model.request.*"`, 1},
		{"duplicate event", `"tool.before","model.*"`, `"tool.before","tool.before"`, 1},
		{"no events", `"events":["tool.before","model.*"]`, `"events":[]`, 1},
		{"observe with timeout", `"mode":"observe",`, `"mode":"observe","timeoutMs":5,`, 1},
		{"unknown mode", `"mode":"observe"`, `"mode":"watch"`, 1},
		{"no content", `,"content":{"default":"omit"}`, ``, 1},
		{"content without default", `"content":{"default":"omit"}`, `"content":{"text":"omit"}`, 1},
		{"content bad value", `"custom":"omit"`, `"custom":"all"`, 1},
		{"managed but disableable", `"disableable":false`, `"disableable":true`, 1},
		{"managed without disableable", `,"disableable":false`, ``, 1},
		{"upload over plain http off loopback", `"http://127.0.0.1:8080/up"`, `"http://uploads.example/up"`, 1},
		{"upload without maxBytes", `,"maxBytes":0`, ``, 1},
		{"includeNative not boolean", `"includeNative":false`, `"includeNative":"no"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := validRegistration
			if tt.old != "" {
				if !strings.Contains(doc, tt.old) {
					t.Fatalf("test edits %q, which the registration does not contain", tt.old)
				}
				doc = strings.Replace(doc, tt.old, tt.new, 1)
			}
			reg, _, err := tap.ParseJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			fs := RegistrationFindings(reg)
			wantFindings(t, fs, "BASE-5", tt.want)
			for _, f := range fs {
				if strings.Contains(f.Message, "s3cr3t") {
					t.Errorf("finding repeats the literal credential: %v", f)
				}
			}
		})
	}
}

func TestDispatch(t *testing.T) {
	reg, _, err := tap.ParseJSON([]byte(`{"protocolVersion":"draft","hooks":[{"id":"com.example.p","transport":{"type":"http","url":"https://p.example/h"},
		"subscriptions":[
			{"events":["tool.before","model.*"],"mode":"intercept","timeoutMs":500,"failurePolicy":"fail-open","content":{"default":"omit"}},
			{"events":["tool.after"],"mode":"observe","content":{"default":"omit"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	intercept := func(typ string) *tap.Frame {
		return harnessFrame(convIntercept("e1", convEvent("e1", typ, ""), denyCaps))
	}
	observe := func(typ string) *tap.Frame { return harnessFrame(convObserve(convEvent("e1", typ, ""))) }
	tests := []struct {
		name  string
		f     *tap.Frame
		want  int
		level tap.Level
	}{
		{"intercept exact", intercept("tool.before"), 0, 0},
		{"intercept by family wildcard", intercept("model.request.before"), 0, 0},
		{"intercept not subscribed", intercept("turn.start"), 1, tap.Error},
		{"intercept of an observe subscription", intercept("tool.after"), 1, tap.Error},
		{"observe subscribed", observe("tool.after"), 0, 0},
		{"observe not subscribed", observe("session.end"), 1, tap.Error},
		{"short-circuit observe", observe("tool.before"), 1, tap.Info},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := runRules(tap.Config{Registration: reg, HookID: "com.example.p", Partial: true}, dispatchRules(), tt.f)
			wantFindings(t, fs, "BASE-5", tt.want)
			if tt.want == 1 && fs[0].Level != tt.level {
				t.Errorf("level %v, want %v", fs[0].Level, tt.level)
			}
		})
	}
	// Without a selected hook there is nothing to dispatch against.
	fs := runRules(tap.Config{Registration: reg, Partial: true}, dispatchRules(), intercept("turn.start"))
	wantFindings(t, fs, "BASE-5", 0)
}
