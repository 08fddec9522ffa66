package tap

import "encoding/json"

// PrefixFacts are what the prefix of a truncated audit copy still says about
// its message: the JSON-RPC id, the method and the event's id and type, when
// each lies complete inside the prefix. The conversation pairs a truncated
// request with its answer through them, so that a frame the tap could not
// audit whole never turns its answer into a false CORR-2.
type PrefixFacts struct {
	// ID is the top-level "id" (nil when not in the prefix).
	ID *Value
	// Method is the top-level "method" ("" when not in the prefix).
	Method string
	// EventID and EventType are params.event.id and params.event.type.
	EventID, EventType string
}

// ScanPrefix reads the members of a JSON object from raw, which may stop
// anywhere, and returns the facts found in it. It never fails: what is cut
// off, or is not JSON, is simply not found.
func ScanPrefix(raw []byte) PrefixFacts {
	var (
		pf    PrefixFacts
		stack []prefixLevel
		i     int
	)
	skip := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
			i++
		}
	}
	// str reads a complete JSON string at i; ok is false when it is cut off.
	str := func() (tok []byte, ok bool) {
		start := i
		for j := i + 1; j < len(raw); j++ {
			switch raw[j] {
			case '\\':
				j++
			case '"':
				i = j + 1
				return raw[start:i], true
			}
		}
		return nil, false
	}
	record := func(tok []byte) {
		path := make([]string, len(stack))
		for k, l := range stack {
			path[k] = l.key
		}
		text := func() string {
			var s string
			if json.Unmarshal(tok, &s) != nil {
				return ""
			}
			return s
		}
		switch {
		case len(path) == 1 && path[0] == "id" && pf.ID == nil:
			if v, _, err := ParseJSON(tok); err == nil {
				pf.ID = v
			}
		case len(path) == 1 && path[0] == "method" && pf.Method == "":
			pf.Method = text()
		case len(path) == 3 && path[0] == "params" && path[1] == "event" && path[2] == "id" && pf.EventID == "":
			pf.EventID = text()
		case len(path) == 3 && path[0] == "params" && path[1] == "event" && path[2] == "type" && pf.EventType == "":
			pf.EventType = text()
		}
	}
	skip()
	if i >= len(raw) || raw[i] != '{' {
		return pf
	}
	i++
	stack = append(stack, prefixLevel{obj: true, wantKey: true})
	for len(stack) > 0 {
		skip()
		if i >= len(raw) {
			return pf
		}
		top := &stack[len(stack)-1]
		c := raw[i]
		switch {
		case c == '}' || c == ']':
			i++
			stack = stack[:len(stack)-1]
			continue
		case c == ',':
			i++
			top.wantKey = top.obj
			continue
		case top.obj && top.wantKey:
			if c != '"' {
				return pf
			}
			tok, ok := str()
			if !ok {
				return pf
			}
			var k string
			if json.Unmarshal(tok, &k) != nil {
				return pf
			}
			top.key, top.wantKey = k, false
			skip()
			if i >= len(raw) || raw[i] != ':' {
				return pf
			}
			i++
			continue
		}
		// A value.
		switch c {
		case '{':
			i++
			stack = append(stack, prefixLevel{obj: true, wantKey: true})
		case '[':
			i++
			stack = append(stack, prefixLevel{key: "[]"})
		case '"':
			tok, ok := str()
			if !ok {
				return pf
			}
			record(tok)
		default:
			start := i
			for i < len(raw) && !isDelim(raw[i]) {
				i++
			}
			if i >= len(raw) || start == i {
				return pf // cut off inside the token, or not JSON
			}
			record(raw[start:i])
		}
	}
	return pf
}

// A prefixLevel is one open object or array while scanning a prefix; key is
// the member being read ("[]" inside an array).
type prefixLevel struct {
	obj     bool
	wantKey bool
	key     string
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// RPCIDText is the JSON-RPC id of x's request as written on the wire (see
// IDText), read from the prefix when the request was truncated.
func (x *Exchange) RPCIDText() string {
	if x.Request == nil {
		return ""
	}
	if id := x.Request.RPCID(); id != nil {
		return IDText(id)
	}
	return IDText(ScanPrefix(x.Request.Raw).ID)
}
