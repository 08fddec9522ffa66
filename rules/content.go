package rules

import (
	"strings"

	"github.com/ahp-tap/ahp-tap/tap"
)

// The content model (§8, AHP-CONTENT-001/002): canonical messages own a
// role and ordered parts (EDIT-1); parts are closed, selection-aware
// variants of kind text or attachment (EDIT-2). The event rule (EVT-1)
// calls these validators wherever an event carries content, the effect
// rule wherever an inject carries it, and the edit evaluator inside every
// modify value; problems keep their EDIT-1/EDIT-2 check wherever they are
// found. Content rules have no walk of their own: contentRules only gives
// EDIT-1 and EDIT-2 the rules that report them.

// contentRules reports the EDIT-1 and EDIT-2 problems the shared shape walk
// finds in event content and in effect values, and those the edit
// evaluation finds inside modify values.
func contentRules() []tap.Rule {
	return []tap.Rule{
		contentRule(info("EDIT-1/messages", "EDIT-1", "model, turn and context items are canonical message lists")),
		contentRule(info("EDIT-2/parts", "EDIT-2", "content parts are closed text or attachment variants; metadata, omit and gap views carry no text or body")),
	}
}

// contentRule reports every problem of its check that the content rules
// may report: the shape walk's, then the edit evaluation's (a content
// fault inside a modify value carries the content check, as it would in
// an event). Each analysis is computed once per frame.
func contentRule(ri tap.RuleInfo) tap.Rule {
	return analysisRule{info: ri, analyses: []*tap.Analysis{shapeAnalysis, editAnalysis}}
}

// messageRoles are the canonical roles (§8).
var messageRoles = []string{"system", "developer", "user", "assistant", "tool"}

// messageList checks v, at ptr, as a canonical message list (§8). role
// restricts every message's role ("" allows any canonical role).
func messageList(v *tap.Value, ptr string, role string) []problem {
	c := newChecker(ptr)
	checkMessageList(c, v, role)
	return c.done()
}

// textPartList checks v, at ptr, as a list of text parts (summaries,
// instructions, attention titles).
func textPartList(v *tap.Value, ptr string) []problem {
	return run(v, ptr, textParts)
}

// contentPart checks v, at ptr, as one content part, text or attachment.
func contentPart(v *tap.Value, ptr string) []problem {
	return run(v, ptr, part)
}

// partList checks v, at ptr, as a generic part list (the items of events
// whose content is not model-visible messages).
func partList(v *tap.Value, ptr string) []problem {
	return run(v, ptr, parts)
}

// Shapes of the content model, for composing into event and effect shapes.
var (
	messages     shape = func(c *checker, v *tap.Value) { checkMessageList(c, v, "") }
	userMessages shape = func(c *checker, v *tap.Value) { checkMessageList(c, v, "user") }
	asstMessages shape = func(c *checker, v *tap.Value) { checkMessageList(c, v, "assistant") }
	oneMessage   shape = func(c *checker, v *tap.Value) { checkMessage(c, v, "") }
	parts        shape = list("EDIT-2", 0, part)
	textParts    shape = list("EDIT-2", 0, textPart)
	part         shape = func(c *checker, v *tap.Value) { checkPart(c, v, false) }
	textPart     shape = func(c *checker, v *tap.Value) { checkPart(c, v, true) }
)

func checkMessageList(c *checker, v *tap.Value, role string) {
	if !v.Is(tap.Array) {
		c.report("EDIT-1", "%s must be a list of messages {id, role, parts}, found %s", c.name(), v.Describe())
		return
	}
	for i, m := range v.Arr {
		c.index(i)
		checkMessage(c, m, role)
		c.pop()
	}
}

// message is a canonical message: {id, role, parts, synthesized?}, closed.
var message = obj{check: "EDIT-1", what: "a message", closed: true, fields: []field{
	req("id", nonEmpty("EDIT-1")),
	req("role", enum("EDIT-1", messageRoles...)).from(draftBeforeInlineMessages),
	req("parts", parts),
	opt("synthesized", boolean("EDIT-1")),
}}

func checkMessage(c *checker, v *tap.Value, role string) {
	if !v.Is(tap.Object) {
		c.report("EDIT-1", "%s must be a message object {id, role, parts}, found %s", c.name(), v.Describe())
		return
	}
	if v.Has("kind") && !v.Has("parts") {
		// A bare part where a message belongs: name the real mistake.
		c.report("EDIT-1", "%s is a content part, but a message {id, role, parts} is required here", c.name())
		return
	}
	message.members(c, v)
	if role == "" {
		return
	}
	if r, ok := v.Get("role").Text(); ok && r != role && inSet(r, messageRoles...) {
		c.reportAt("EDIT-1", "role", "every message here must have role %q, found %q", role, r)
	}
}

// partIdentity are members every part variant may carry.
var partIdentity = []field{
	req("id", nonEmpty("EDIT-2")),
	opt("category", nonEmpty("EDIT-2")),
	opt("synthesized", boolean("EDIT-2")),
}

func partFields(kind string, extra ...field) []field {
	fs := append([]field{}, partIdentity...)
	fs = append(fs, req("kind", constant("EDIT-2", kind)), req("selection", enum("EDIT-2", "body", "metadata", "omit")))
	if kind == "text" {
		fs = append(fs, req("mediaType", constant("EDIT-2", "text/plain")))
	} else {
		fs = append(fs, req("mediaType", attachmentMediaType))
	}
	return append(fs, extra...)
}

var (
	gap = (&obj{check: "EDIT-2", what: "a gap", closed: true, fields: []field{
		req("reason", nonEmpty("EDIT-2")),
		opt("path", nonEmpty("EDIT-2")),
	}}).shape()
	size   = integer("EDIT-2", 0)
	sha256 = func(c *checker, v *tap.Value) {
		if s, ok := v.Text(); !ok || !isLowerHex64(s) {
			c.report("EDIT-2", "%s must be exactly 64 lowercase hex digits, found %s", c.name(), show(v))
		}
	}
	// reference is a content reference: {ref} only (§8, newest).
	reference = (&obj{check: "EDIT-2", what: "a content reference", closed: true, fields: []field{
		req("ref", nonEmpty("EDIT-2")),
		ban("size", "a content reference is {ref} only; size belongs in the upload receipt").from(draftBeforeReceipts),
		ban("sha256", "a content reference is {ref} only; sha256 belongs in the upload receipt").from(draftBeforeReceipts),
	}}).shape()

	textBody = obj{check: "EDIT-2", skip: isPartRoleKey, what: "a text body part", closed: true, fields: partFields("text",
		req("text", str("EDIT-2")),
		ban("body", "text is inline in \"text\", never a body reference").from(draftBeforeInlineMessages),
		ban("size", "a text body part carries its text, not a size"),
		ban("sha256", "a text body part carries its text, not a sha256"),
	)}
	textGap = obj{check: "EDIT-2", skip: isPartRoleKey, what: "a text gap part", closed: true, fields: partFields("text",
		req("gap", gap), opt("size", size), opt("sha256", sha256),
		ban("text", "a gap view carries no text"),
		ban("body", "a gap view carries no body"),
	)}
	textView = obj{check: "EDIT-2", skip: isPartRoleKey, what: "a text metadata or omit part", closed: true, fields: partFields("text",
		opt("size", size), opt("sha256", sha256),
		ban("text", "metadata and omit views carry no text"),
		ban("body", "metadata and omit views carry no body"),
		ban("gap", "only a body selection reports a gap"),
	)}
	attBody = obj{check: "EDIT-2", skip: isPartRoleKey, what: "an attachment body part", closed: true, fields: partFields("attachment",
		req("body", reference),
		ban("text", "an attachment carries a body reference, never inline text"),
		ban("size", "an attachment body part carries only its {ref}").from(draftBeforeReceipts),
		ban("sha256", "an attachment body part carries only its {ref}").from(draftBeforeReceipts),
	)}
	attGap = obj{check: "EDIT-2", skip: isPartRoleKey, what: "an attachment gap part", closed: true, fields: partFields("attachment",
		req("gap", gap), opt("size", size), opt("sha256", sha256),
		ban("text", "a gap view carries no text"),
		ban("body", "a gap view carries no body"),
	)}
	attView = obj{check: "EDIT-2", skip: isPartRoleKey, what: "an attachment metadata or omit part", closed: true, fields: partFields("attachment",
		opt("size", size), opt("sha256", sha256),
		ban("text", "metadata and omit views carry no text"),
		ban("body", "metadata and omit views carry no body"),
		ban("gap", "only a body selection reports a gap"),
	)}
)

// attachmentMediaType: non-empty, and neither text/* nor JSON (§8): those
// are text, serialized inline.
func attachmentMediaType(c *checker, v *tap.Value) {
	s, ok := v.Text()
	if !ok || s == "" {
		c.report("EDIT-2", "%s must be a non-empty media type, found %s", c.name(), show(v))
		return
	}
	if !isMediaType(s) {
		c.report("EDIT-2", "%s must be a media type type/subtype[;param=value] (RFC 9110 §8.3.1: tokens, no white space or line break around it), found %s", c.name(), show(v))
		return
	}
	if textualMediaType(s) {
		c.report("EDIT-2", "an attachment must not have media type %q: text and JSON content is a text part with inline text", s)
	}
}

// isMediaType reports whether s is a media type by RFC 9110 §8.3.1's
// grammar: type "/" subtype *( OWS ";" OWS [ name "=" ( token /
// quoted-string ) ] ), type, subtype and names tokens. Nothing before the
// type or after the last parameter: "image/png\n" is not a media type.
func isMediaType(s string) bool {
	i := tokenEnd(s, 0)
	if i == 0 || i == len(s) || s[i] != '/' {
		return false
	}
	j := tokenEnd(s, i+1)
	if j == i+1 {
		return false
	}
	for i = j; i < len(s); {
		i = owsEnd(s, i)
		if i == len(s) || s[i] != ';' {
			return false
		}
		i = owsEnd(s, i+1)
		if i == len(s) || s[i] == ';' {
			continue // an empty parameter
		}
		n := tokenEnd(s, i)
		if n == i || n == len(s) || s[n] != '=' {
			return false
		}
		i = n + 1
		if i < len(s) && s[i] == '"' {
			if i = quotedEnd(s, i); i < 0 {
				return false
			}
		} else if v := tokenEnd(s, i); v == i {
			return false
		} else {
			i = v
		}
	}
	return true
}

// tokenEnd returns the end of the RFC 9110 token starting at i.
func tokenEnd(s string, i int) int {
	for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || strings.IndexByte("!#$%&'*+-.^_`|~", s[i]) >= 0) {
		i++
	}
	return i
}

// owsEnd skips optional white space (spaces and tabs, never a line break).
func owsEnd(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// quotedEnd returns the end of the quoted-string starting at s[i] == '"',
// or -1: qdtext is tab, space and visible characters, "\\" escapes one.
func quotedEnd(s string, i int) int {
	for i++; i < len(s); i++ {
		switch b := s[i]; {
		case b == '"':
			return i + 1
		case b == '\\':
			if i++; i == len(s) || s[i] < 0x20 && s[i] != '\t' || s[i] == 0x7f {
				return -1
			}
		case b < 0x20 && b != '\t' || b == 0x7f:
			return -1
		}
	}
	return -1
}

// textualMediaType reports whether mt is text/*, application/json or a
// +json type, case-insensitively, parameters allowed.
func textualMediaType(mt string) bool {
	if len(mt) >= 5 && strings.EqualFold(mt[:5], "text/") {
		return true
	}
	slash := strings.IndexByte(mt, '/')
	if slash <= 0 {
		return false
	}
	sub := mt[slash+1:]
	if i := strings.IndexByte(sub, ';'); i >= 0 {
		sub = sub[:i]
	}
	sub = strings.TrimRight(sub, " \t")
	if len(sub) < 4 || !strings.EqualFold(sub[len(sub)-4:], "json") {
		return false
	}
	return len(sub) == 4 || sub[len(sub)-5] == '+'
}

func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f') {
			return false
		}
	}
	return true
}

// checkPart checks one part; textOnly restricts it to the text variants.
func checkPart(c *checker, v *tap.Value, textOnly bool) {
	if !v.Is(tap.Object) {
		c.report("EDIT-2", "%s must be a content part object, found %s", c.name(), v.Describe())
		return
	}
	// §8: the role belongs to the message; parts carry neither a role
	// nor a parent identity.
	for _, m := range v.Obj {
		if isPartRoleKey(m.Key) {
			c.reportAt("EDIT-1", m.Key, "a content part must not carry %q: role and parent identity belong to the message", m.Key)
		}
	}
	kind, _ := v.Get("kind").Text()
	if has(v, "parts") && !has(v, "kind") {
		c.report("EDIT-2", "%s is a message, but a content part {id, kind, mediaType, selection, …} is required here", c.name())
		return
	}
	switch kind {
	case "text":
	case "attachment":
		if textOnly {
			c.reportAt("EDIT-2", "kind", "only text parts are allowed here, found an attachment")
			return
		}
	default:
		if textOnly {
			c.reportAt("EDIT-2", "kind", "\"kind\" must be \"text\", found %s", show(v.Get("kind")))
		} else {
			// §8: there is no JSON (or other) part kind; structure is serialized into text.
			c.reportAt("EDIT-2", "kind", "\"kind\" must be \"text\" or \"attachment\" (there is no JSON part kind; serialize structure into text), found %s", show(v.Get("kind")))
		}
		return
	}
	var variant *obj
	switch sel, _ := v.Get("selection").Text(); sel {
	case "body":
		switch {
		case has(v, "gap"):
			variant = pick(kind, &textGap, &attGap)
		case kind == "text" && has(v, "body") && !has(v, "text"):
			// §8: text is never replaced with a reference.
			c.reportAt("EDIT-2", "body", "a text part carries its text inline in \"text\"; text is never replaced with a body reference")
			c.olderDraft(draftBeforeInlineMessages)
			return
		default:
			variant = pick(kind, &textBody, &attBody)
		}
	case "metadata", "omit":
		variant = pick(kind, &textView, &attView)
	default:
		c.reportAt("EDIT-2", "selection", "\"selection\" must be \"body\", \"metadata\" or \"omit\", found %s", show(v.Get("selection")))
		return
	}
	variant.members(c, v)
}

func pick(kind string, text, att *obj) *obj {
	if kind == "text" {
		return text
	}
	return att
}

// isPartRoleKey reports whether key is a member the closed part variants
// would otherwise call unknown but that is reported under EDIT-1.
func isPartRoleKey(key string) bool {
	return key == "role" || strings.HasPrefix(key, "parent") || key == "messageId"
}
