package rules

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ahp-tap/ahp-tap/tap"
)

// FuzzShapes: no input makes a shape validator panic, and every problem
// names a catalogue check and a pointer under the validated value.
func FuzzShapes(f *testing.F) {
	f.Add([]byte(benchRequest))
	f.Add([]byte(benchResponse))
	for typ, p := range minimalPayloads {
		f.Add([]byte(interceptJS(eventJS(typ, p), `{"effects":["deny","flow"],"flow":{"operations":["continue"]}}`)))
	}
	if paths, _ := filepath.Glob(filepath.Join(sharedAHP, "fixtures/draft/http/*.json")); len(paths) > 0 {
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _, err := tap.ParseJSON(data)
		if err != nil {
			return
		}
		params, ev, res := v.Get("params"), v.Path("params", "event"), v.Get("result")
		var ps []problem
		ps = append(ps, eventProblems(ev, "/params/event", true)...)
		ps = append(ps, eventProblems(v, "", false)...)
		ps = append(ps, interceptCapabilityProblems(params, "/params")...)
		ps = append(ps, capabilitiesRequestProblems(params, "/params")...)
		ps = append(ps, interceptResultProblems(res)...)
		ps = append(ps, capabilitiesResultProblems(res, "/result")...)
		ps = append(ps, effectProblems(res.Get("effects"), "/result/effects")...)
		ps = append(ps, messageList(v, "", "")...)
		ps = append(ps, partList(v, "")...)
		ps = append(ps, textPartList(v, "")...)
		ps = append(ps, contentPart(v, "")...)
		ps = append(ps, manifestProblems(v, "", "CAP-2")...)
		for _, p := range ps {
			if _, ok := CheckByID(string(p.check)); !ok || p.msg == "" {
				t.Fatalf("problem %+v: unknown check or empty message", p)
			}
		}
	})
}
