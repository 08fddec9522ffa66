package rules

import (
	"github.com/ahp-tap/ahp-tap/vocab"

	"bytes"
	cryptosha256 "crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	textmessage "golang.org/x/text/message"

	"github.com/ahp-tap/ahp-tap/tap"
)

// A Spec is an upstream schema snapshot loaded with --spec DIR: the
// snapshot's JSON Schemas compiled offline, ready to validate messages.
// A Spec is read-only after LoadSpec and safe for concurrent use.
type Spec struct {
	// Dir is the schema directory (DIR/schema/<snapshot>).
	Dir string
	// Snapshot is the snapshot the schemas describe.
	Snapshot string

	entry    *jsonschema.Schema            // schema.json: any wire message
	reg      *jsonschema.Schema            // registration.schema.json, when the snapshot has one
	branches map[string]*jsonschema.Schema // per message shape, by file name (see branchFor)
}

// specBranches are the message shapes schema.json selects from, by file
// (and fragment) inside the snapshot. A message is validated against the
// entry schema; when that fails, against the one shape it is meant to be,
// so that the failure names the field at fault rather than "oneOf failed".
var specBranches = []string{
	"intercept-request.schema.json",
	"intercept-response.schema.json",
	"common.schema.json#/$defs/errorResponse",
	"observe-notification.schema.json",
	"capabilities-request.schema.json",
	"capabilities-response.schema.json",
}

// offlineLoader refuses every URL: all $refs resolve to files of the
// snapshot registered up front, never to the network.
type offlineLoader struct{}

func (offlineLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not in the snapshot directory (ahp-tap resolves $ref offline only)", url)
}

// LoadSpec loads the upstream schema snapshot in dir, laid out like
// shared/ahp: schema/<snapshot>/ with its manifest.json and schema.json
// (dir may also be that schema directory itself). Every file listed in the
// manifest must match its sha256. Every .json file of the directory is
// registered by its $id, so $ref resolution never leaves the directory.
func LoadSpec(dir, snapshot string) (*Spec, error) {
	if snapshot == "" {
		snapshot = tap.DefaultSnapshot
	}
	root := dir
	sdir := filepath.Join(dir, "schema", snapshot)
	if _, err := os.Stat(filepath.Join(sdir, "manifest.json")); err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, "manifest.json")); err2 != nil {
			return nil, fmt.Errorf("%s has no schema/%s/manifest.json", dir, snapshot)
		}
		sdir, root = dir, filepath.Join(dir, "..", "..")
	}
	if err := verifyManifest(root, sdir, snapshot); err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(offlineLoader{})
	entries, err := os.ReadDir(sdir)
	if err != nil {
		return nil, err
	}
	var entryID string
	for _, de := range entries {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, ".json") || name == "manifest.json" {
			continue
		}
		data, err := readSpecFile(sdir, name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tap.TrimBOM(data)))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %v", name, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("schema %s has no $id", name)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %v", name, err)
		}
		if name == "schema.json" {
			entryID = id
		}
	}
	if entryID == "" {
		return nil, fmt.Errorf("%s has no schema.json", sdir)
	}
	s := &Spec{Dir: sdir, Snapshot: snapshot, branches: map[string]*jsonschema.Schema{}}
	if s.entry, err = c.Compile(entryID); err != nil {
		return nil, fmt.Errorf("compiling %s: %v", entryID, err)
	}
	base := entryID[:strings.LastIndex(entryID, "/")+1]
	if _, err := os.Stat(filepath.Join(sdir, "registration.schema.json")); err == nil {
		if s.reg, err = c.Compile(base + "registration.schema.json"); err != nil {
			return nil, fmt.Errorf("compiling registration.schema.json: %v", err)
		}
	}
	for _, b := range specBranches {
		if _, err := os.Stat(filepath.Join(sdir, strings.SplitN(b, "#", 2)[0])); err != nil {
			continue // this snapshot has no such shape: the entry schema alone judges it
		}
		sch, err := c.Compile(base + b)
		if err != nil {
			return nil, fmt.Errorf("compiling %s: %v", b, err)
		}
		s.branches[b] = sch
	}
	return s, nil
}

// verifyManifest checks the snapshot's manifest: its protocolVersion and
// the sha256 of every document it lists (paths relative to root).
func verifyManifest(root, sdir, snapshot string) error {
	data, err := readSpecFile(sdir, "manifest.json")
	if err != nil {
		return err
	}
	var m struct {
		ProtocolVersion string `json:"protocolVersion"`
		Documents       []struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"documents"`
	}
	if err := json.Unmarshal(tap.TrimBOM(data), &m); err != nil {
		return fmt.Errorf("%s/manifest.json: %v", sdir, err)
	}
	if m.ProtocolVersion != "" && m.ProtocolVersion != snapshot {
		return fmt.Errorf("%s/manifest.json is for protocolVersion %q, not %q", sdir, m.ProtocolVersion, snapshot)
	}
	for _, d := range m.Documents {
		b, err := readSpecFile(root, filepath.FromSlash(d.Path))
		if err != nil {
			return fmt.Errorf("manifest lists %s: %v", d.Path, err)
		}
		sum := cryptosha256.Sum256(b)
		if d.SHA256 != "" && hex.EncodeToString(sum[:]) != d.SHA256 {
			return fmt.Errorf("%s does not match the sha256 its manifest lists", d.Path)
		}
	}
	return nil
}

// maxSpecFile caps one file of a schema snapshot.
const maxSpecFile = 64 << 20

// readSpecFile reads rel inside dir, and only there (issue 8 item 10: a
// manifest naming ../../etc/passwd or /dev/zero): rel must be a local
// path, its real path (links resolved) must stay inside dir's, and it must
// be a regular file of at most maxSpecFile bytes, opened without blocking.
func readSpecFile(dir, rel string) ([]byte, error) {
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%s is outside the spec directory", rel)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		return nil, err
	}
	if r, err := filepath.Rel(realDir, real); err != nil || !filepath.IsLocal(r) {
		return nil, fmt.Errorf("%s leads outside the spec directory (to %s)", rel, real)
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if st.Size() > maxSpecFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", rel, maxSpecFile>>20)
	}
	return io.ReadAll(io.LimitReader(f, maxSpecFile))
}

// specChecks are the checks schema failures map to; each has its own rule
// (a rule reports under exactly one check).
var specChecks = []vocab.CheckID{vocab.Base1, vocab.Base2, vocab.Base4, vocab.Evt1, vocab.Edit1, vocab.Edit2, vocab.Cap1, vocab.Cap2, vocab.Eff1}

// specRules validates every message against the upstream snapshot. The
// rules read one validation per frame (an analysis the engine runs once)
// and each reports the failures that belong to its check.
func specRules(s *Spec) []tap.Rule {
	if s == nil {
		return nil
	}
	a := problemAnalysis("spec", specChecks, nil, func(c *tap.Conversation, f *tap.Frame) []problem {
		if f.Tree == nil || f.Tree.Kind != tap.Object {
			return nil // BASE-1 and STDIO-1 report what is not a JSON object
		}
		return s.problems(c, f)
	})
	var out []tap.Rule
	for _, check := range specChecks {
		out = append(out, analysisRule{analyses: []*tap.Analysis{a}, info: info("SPEC/"+string(check), check,
			"(with --spec DIR) the message satisfies the upstream "+s.Snapshot+" JSON Schema; this rule reports the failures that belong to "+string(check))})
	}
	return out
}

// SpecRuleInfos describes the rules --spec adds (one per check that schema
// failures map to), for listings.
func SpecRuleInfos() []tap.RuleInfo {
	var out []tap.RuleInfo
	for _, r := range specRules(&Spec{Snapshot: "<snapshot>"}) {
		out = append(out, r.Info())
	}
	return append(out, specRegistration)
}

// maxSpecProblems caps the schema failures reported for one message.
const maxSpecProblems = 12

var specPrinter = textmessage.NewPrinter(language.English)

// problems validates f and maps each schema failure to a check.
func (s *Spec) problems(c *tap.Conversation, f *tap.Frame) []problem {
	doc := f.Tree.Any()
	err := s.entry.Validate(doc)
	if err == nil {
		return nil
	}
	name := "schema.json"
	if b := s.branchFor(c, f); b != "" {
		if berr := s.branches[b].Validate(doc); berr != nil {
			err, name = berr, b
		}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []problem{{check: vocab.Base1, msg: fmt.Sprintf("the upstream %s schema could not judge the message: %v", s.Snapshot, err)}}
	}
	var leaves []*jsonschema.ValidationError
	bestLeaves(ve, &leaves)
	return leafProblems(leaves, s.Snapshot, name, func(loc []string) vocab.CheckID { return specCheck(loc, f) })
}

// leafProblems turns schema failures into problems (at most
// maxSpecProblems, without repeats), each under the check checkOf names for
// its location.
func leafProblems(leaves []*jsonschema.ValidationError, snapshot, name string, checkOf func(loc []string) vocab.CheckID) []problem {
	var out []problem
	seen := map[string]bool{}
	for _, l := range leaves {
		loc := slices.Clone(l.InstanceLocation)
		switch k := l.ErrorKind.(type) {
		case *kind.Required:
			loc = append(loc, k.Missing[0])
		case *kind.AdditionalProperties:
			loc = append(loc, k.Properties[0])
		}
		ptr := specPointer(loc)
		text := l.ErrorKind.LocalizedString(specPrinter)
		if _, ok := l.ErrorKind.(*kind.Not); ok {
			text = "it matches a shape the schema forbids at " + schemaRef(l.SchemaURL)
		}
		key := ptr + "\x00" + text
		if seen[key] {
			continue
		}
		seen[key] = true
		where := "the document"
		if len(l.InstanceLocation) > 0 {
			where = specPointer(l.InstanceLocation)
		}
		out = append(out, problem{check: checkOf(loc), ptr: ptr,
			msg: fmt.Sprintf("%s does not satisfy the upstream %s schema (%s): %s", where, snapshot, name, text)})
		if len(out) == maxSpecProblems {
			break
		}
	}
	return out
}

// specRegistration reports registration-schema failures (BASE-5).
var specRegistration = info("SPEC/BASE-5", vocab.Base5,
	"(with --spec DIR) the registration document satisfies the upstream registration JSON Schema")

// RegistrationFindings validates a registration document against the
// snapshot's registration schema; every failure is a BASE-5 finding (the
// registration must be valid before use, AHP-REG-001). It returns nothing
// when the snapshot has no registration schema.
func (s *Spec) RegistrationFindings(reg *tap.Value) []tap.Finding {
	if s == nil || s.reg == nil || reg == nil {
		return nil
	}
	err := s.reg.Validate(reg.Any())
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var leaves []*jsonschema.ValidationError
	bestLeaves(ve, &leaves)
	var out []tap.Finding
	for _, p := range leafProblems(leaves, s.Snapshot, "registration.schema.json", func([]string) vocab.CheckID { return vocab.Base5 }) {
		out = append(out, specRegistration.At(nil, 0, p.ptr, "%s", p.msg))
	}
	return out
}

// branchFor names the message shape f is meant to be, or "".
func (s *Spec) branchFor(c *tap.Conversation, f *tap.Frame) string {
	var b string
	switch m := f.Msg.(type) {
	case *tap.Request:
		switch m.Method {
		case methodIntercept:
			b = "intercept-request.schema.json"
		case methodCapabilities:
			b = "capabilities-request.schema.json"
		}
	case *tap.Notification:
		if m.Method == methodObserve {
			b = "observe-notification.schema.json"
		}
	case *tap.Response:
		method := ""
		if x := c.Exchange(); x != nil {
			method = x.Method
		}
		switch {
		case f.Tree.Has("error"):
			b = "common.schema.json#/$defs/errorResponse"
		case method == methodCapabilities, method == "" && m.Result.Has("manifest"):
			b = "capabilities-response.schema.json"
		default:
			b = "intercept-response.schema.json"
		}
	}
	if s.branches[b] == nil {
		return ""
	}
	return b
}

// bestLeaves collects the failures that explain ve. Where a oneOf or anyOf
// failed, only the alternative that got furthest into the message (the
// deepest failure, then the fewest) explains it: the others failed only
// because the message is not of their kind.
func bestLeaves(ve *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(ve.Causes) == 0 {
		*out = append(*out, ve)
		return
	}
	switch ve.ErrorKind.(type) {
	case *kind.OneOf, *kind.AnyOf:
		var best []*jsonschema.ValidationError
		bestDepth, bestOther := -1, true
		alts := make([][]*jsonschema.ValidationError, 0, len(ve.Causes))
		for _, cause := range ve.Causes {
			var ls []*jsonschema.ValidationError
			bestLeaves(cause, &ls)
			alts = append(alts, ls)
			d, other := 0, false
			for _, l := range ls {
				d = max(d, len(l.InstanceLocation))
				other = other || discriminates(l)
			}
			better := !other && bestOther ||
				other == bestOther && (d > bestDepth || d == bestDepth && len(ls) < len(best))
			if best == nil || better {
				best, bestDepth, bestOther = ls, d, other
			}
		}
		if bestOther {
			// Every alternative is of another kind: the value at the
			// discriminator is none the schema defines. Say which it may be.
			if l := unionOfKinds(alts); l != nil {
				best = []*jsonschema.ValidationError{l}
			}
		}
		*out = append(*out, best...)
	default:
		for _, cause := range ve.Causes {
			bestLeaves(cause, out)
		}
	}
}

// unionOfKinds merges the discriminator failures of alternatives that all
// failed at the same location ("type" must be 'allow', or 'deny', or …)
// into one failure listing every value allowed there. It returns nil when
// the alternatives do not share one discriminator location.
func unionOfKinds(alts [][]*jsonschema.ValidationError) *jsonschema.ValidationError {
	var at *jsonschema.ValidationError
	var want []any
	var got any
	for _, ls := range alts {
		found := false
		for _, l := range ls {
			if !discriminates(l) {
				continue
			}
			if at == nil {
				at = l
			} else if !slices.Equal(at.InstanceLocation, l.InstanceLocation) {
				continue
			}
			found = true
			switch k := l.ErrorKind.(type) {
			case *kind.Const:
				got, want = k.Got, appendNew(want, k.Want)
			case *kind.Enum:
				got = k.Got
				for _, w := range k.Want {
					want = appendNew(want, w)
				}
			}
		}
		if !found {
			return nil
		}
	}
	if at == nil {
		return nil
	}
	return &jsonschema.ValidationError{SchemaURL: at.SchemaURL, InstanceLocation: at.InstanceLocation,
		ErrorKind: &kind.Enum{Got: got, Want: want}}
}

// appendNew appends v unless list holds it already (objects and arrays,
// which cannot be compared with ==, are always appended).
func appendNew(list []any, v any) []any {
	switch v.(type) {
	case map[string]any, []any:
		return append(list, v)
	}
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

// discriminates reports whether a failure says the message is of another
// kind than the alternative describes: a wrong "type" or "method" constant
// (an event, effect, part or message of another type).
func discriminates(l *jsonschema.ValidationError) bool {
	if n := len(l.InstanceLocation); n > 0 {
		switch l.InstanceLocation[n-1] {
		case "type", "method", "selection", "kind", "operation", "mode":
			switch l.ErrorKind.(type) {
			case *kind.Const, *kind.Enum:
				return true
			}
		}
	}
	return false
}

// specCheck maps a schema failure at instance location loc to the check it
// belongs to.
func specCheck(loc []string, f *tap.Frame) vocab.CheckID {
	if slices.Contains(loc, "extensions") {
		return vocab.Base4
	}
	if len(loc) < 2 {
		return vocab.Base1 // the envelope: jsonrpc, id, method, params, result, error
	}
	switch loc[0] {
	case "params":
		switch loc[1] {
		case "protocolVersion":
			return vocab.Base2
		case "capabilities":
			return vocab.Cap1
		case "event":
			switch {
			case slices.Contains(loc, "parts"):
				return vocab.Edit2
			case slices.Contains(loc, "messages"), slices.Contains(loc, "items"):
				return vocab.Edit1
			}
			return vocab.Evt1
		}
		if f.Method() == methodCapabilities {
			return vocab.Cap2
		}
	case "result":
		switch loc[1] {
		case "protocolVersion":
			return vocab.Base2
		case "effects":
			return vocab.Eff1
		case "manifest":
			return vocab.Cap2
		}
	}
	return vocab.Base1
}

// schemaRef shortens an absolute schema location to file#fragment.
func schemaRef(u string) string {
	if i := strings.LastIndex(u, "/schemas/"); i >= 0 {
		u = u[i+len("/schemas/"):]
		if j := strings.Index(u, "/"); j >= 0 {
			u = u[j+1:]
		}
	}
	return u
}

// specPointer renders an instance location as a JSON Pointer.
func specPointer(loc []string) string {
	var b strings.Builder
	for _, s := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}
