package rules

import (
	"strings"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

func mustParse(t testing.TB, js string) *tap.Value {
	t.Helper()
	v, _, err := tap.ParseJSON([]byte(js))
	if err != nil {
		t.Fatalf("ParseJSON(%s): %v", js, err)
	}
	return v
}

// countCheck counts problems of check.
func countCheck(ps []problem, check string) int {
	n := 0
	for _, p := range ps {
		if string(p.check) == check {
			n++
		}
	}
	return n
}

func showProblems(ps []problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("\n  " + string(p.check) + " " + p.ptr + ": " + p.msg)
	}
	return b.String()
}

const (
	textBodyJS = `{"id":"p1","kind":"text","mediaType":"text/plain","selection":"body","text":"hi"}`
	attBodyJS  = `{"id":"p2","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"u1"}}`
)

func TestContentPart(t *testing.T) {
	hash := strings.Repeat("a", 64)
	tests := []struct {
		name         string
		js           string
		edit1, edit2 int
	}{
		{"text body", textBodyJS, 0, 0},
		{"text body with category and synthesized", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"","category":"reasoning","synthesized":true}`, 0, 0},
		{"text gap", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","gap":{"reason":"too_large","path":"x"},"size":3,"sha256":"` + hash + `"}`, 0, 0},
		{"text metadata", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","size":0}`, 0, 0},
		{"text omit", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"omit"}`, 0, 0},
		{"attachment body", attBodyJS, 0, 0},
		{"attachment gap", `{"id":"p","kind":"attachment","mediaType":"image/png","selection":"body","gap":{"reason":"r"},"size":9}`, 0, 0},
		{"attachment metadata", `{"id":"p","kind":"attachment","mediaType":"application/pdf","selection":"metadata","sha256":"` + hash + `"}`, 0, 0},
		{"json kind", `{"id":"p","kind":"json","mediaType":"application/json","selection":"body","text":"{}"}`, 0, 1},
		{"text as ref", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","body":{"ref":"u"}}`, 0, 1},
		{"wrong text media type", `{"id":"p","kind":"text","mediaType":"text/markdown","selection":"body","text":"x"}`, 0, 1},
		{"metadata text leak", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","text":"x"}`, 0, 1},
		{"omit text leak", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"omit","text":"x"}`, 0, 1},
		{"gap text leak", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","gap":{"reason":"r"},"text":"x"}`, 0, 1},
		{"attachment json suffix", `{"id":"p","kind":"attachment","mediaType":"application/vnd.api+JSON; charset=utf-8","selection":"body","body":{"ref":"u"}}`, 0, 1},
		{"attachment json", `{"id":"p","kind":"attachment","mediaType":"application/json","selection":"body","body":{"ref":"u"}}`, 0, 1},
		{"attachment text", `{"id":"p","kind":"attachment","mediaType":"Text/csv","selection":"body","body":{"ref":"u"}}`, 0, 1},
		{"attachment with text", `{"id":"p","kind":"attachment","mediaType":"image/png","selection":"body","text":"x","body":{"ref":"u"}}`, 0, 1},
		{"negative size", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","size":-1}`, 0, 1},
		{"uppercase hash", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","sha256":"` + strings.Repeat("A", 64) + `"}`, 0, 1},
		{"ref with sha256", `{"id":"p","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"u","sha256":"` + hash + `"}}`, 0, 1},
		{"body part with size", `{"id":"p","kind":"attachment","mediaType":"image/png","selection":"body","body":{"ref":"u"},"size":1}`, 0, 1},
		{"role on part", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"x","role":"user"}`, 1, 0},
		{"parent on part", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"x","parentId":"m"}`, 1, 0},
		{"unknown member", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"body","text":"x","x":1}`, 0, 1},
		{"missing id", `{"kind":"text","mediaType":"text/plain","selection":"body","text":"x"}`, 0, 1},
		{"synthesized string", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"metadata","synthesized":"true"}`, 0, 1},
		{"bad selection", `{"id":"p","kind":"text","mediaType":"text/plain","selection":"all","text":"x"}`, 0, 1},
		{"not an object", `"hello"`, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := contentPart(mustParse(t, tt.js), "/p")
			if got1, got2 := countCheck(ps, "EDIT-1"), countCheck(ps, "EDIT-2"); got1 != tt.edit1 || got2 != tt.edit2 || len(ps) != got1+got2 {
				t.Errorf("contentPart = EDIT-1 %d, EDIT-2 %d, want %d, %d:%s", got1, got2, tt.edit1, tt.edit2, showProblems(ps))
			}
		})
	}
}

func TestMessageList(t *testing.T) {
	msg := func(role string) string {
		return `{"id":"m","role":"` + role + `","parts":[` + textBodyJS + `,` + attBodyJS + `]}`
	}
	tests := []struct {
		name         string
		js, role     string
		edit1, edit2 int
	}{
		{"empty list", `[]`, "", 0, 0},
		{"two messages", `[` + msg("user") + `,` + msg("tool") + `]`, "", 0, 0},
		{"synthesized", `[{"id":"m","role":"system","parts":[],"synthesized":true}]`, "", 0, 0},
		{"role restricted ok", `[` + msg("user") + `]`, "user", 0, 0},
		{"role restricted wrong", `[` + msg("assistant") + `]`, "user", 1, 0},
		{"unknown role", `[` + msg("human") + `]`, "", 1, 0},
		{"role missing", `[{"id":"m","parts":[]}]`, "", 1, 0},
		{"id empty", `[{"id":"","role":"user","parts":[]}]`, "", 1, 0},
		{"extra member", `[{"id":"m","role":"user","parts":[],"name":"x"}]`, "", 1, 0},
		{"bare part", `[` + textBodyJS + `]`, "", 1, 0},
		{"not a list", `{"id":"m","role":"user","parts":[]}`, "", 1, 0},
		{"bad part", `[{"id":"m","role":"user","parts":[{"id":"p","kind":"json","mediaType":"application/json","selection":"body"}]}]`, "", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := messageList(mustParse(t, tt.js), "/items", tt.role)
			if got1, got2 := countCheck(ps, "EDIT-1"), countCheck(ps, "EDIT-2"); got1 != tt.edit1 || got2 != tt.edit2 {
				t.Errorf("messageList = EDIT-1 %d, EDIT-2 %d, want %d, %d:%s", got1, got2, tt.edit1, tt.edit2, showProblems(ps))
			}
		})
	}
}

func TestPartLists(t *testing.T) {
	if ps := textPartList(mustParse(t, `[`+textBodyJS+`]`), "/s"); len(ps) != 0 {
		t.Errorf("textPartList(text) = %s, want none", showProblems(ps))
	}
	if ps := textPartList(mustParse(t, `[`+attBodyJS+`]`), "/s"); countCheck(ps, "EDIT-2") != 1 {
		t.Errorf("textPartList(attachment) = %s, want one EDIT-2", showProblems(ps))
	}
	if ps := partList(mustParse(t, `[`+textBodyJS+`,`+attBodyJS+`]`), "/items"); len(ps) != 0 {
		t.Errorf("partList = %s, want none", showProblems(ps))
	}
	ps := partList(mustParse(t, `[{"id":"m","role":"user","parts":[]}]`), "/items")
	if countCheck(ps, "EDIT-2") != 1 {
		t.Errorf("partList(message) = %s, want one EDIT-2", showProblems(ps))
	}
	if ps := partList(mustParse(t, `[1,`+textBodyJS+`,{"id":"x"}]`), "/items"); len(ps) != 2 || ps[0].ptr != "/items/0" || !strings.HasPrefix(ps[1].ptr, "/items/2") {
		t.Errorf("partList pointers = %s, want /items/0 and /items/2…", showProblems(ps))
	}
}
