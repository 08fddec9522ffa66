package tap

import "testing"

// Issue 22: an integer is an integer whatever its size, and range rules
// compare its value exactly (no float in between).
func TestIntegersOfAnySize(t *testing.T) {
	for _, c := range []struct {
		lit     string
		integer bool
		cmp1    int // CompareInt(1)
		sign    int
		i64     int64
		fits    bool
	}{
		{"1", true, 0, 1, 1, true},
		{"0", true, -1, 0, 0, true},
		{"-0", true, -1, 0, 0, true},
		{"0e5", true, -1, 0, 0, true},
		{"1.0", true, 0, 1, 1, true},
		{"1e3", true, 1, 1, 1000, true},
		{"10E-1", true, 0, 1, 1, true},
		{"1.5", false, 1, 1, 0, false},
		{"0.5", false, -1, 1, 0, false},
		{"-0.5", false, -1, -1, 0, false},
		{"1.5e1", true, 1, 1, 15, true},
		{"9223372036854775807", true, 1, 1, 9223372036854775807, true},
		{"-9223372036854775808", true, -1, -1, -9223372036854775808, true},
		{"9223372036854775808", true, 1, 1, 0, false},
		{"18446744073709551616", true, 1, 1, 0, false}, // 2^64
		{"-18446744073709551616", true, -1, -1, 0, false},
		{"1e308", true, 1, 1, 0, false},
		{"1e400", true, 1, 1, 0, false},
		{"-1e999999999999999999999", true, -1, -1, 0, false},
		{"1e-400", false, -1, 1, 0, false},
		{"-1e-400", false, -1, -1, 0, false},
		// A float would round this to ...68: the conversion is exact.
		{"12345678901234567.0", true, 1, 1, 12345678901234567, true},
		{"9223372036854775807.0", true, 1, 1, 9223372036854775807, true},
		{"9.223372036854775808e18", true, 1, 1, 0, false},
	} {
		v := &Value{Kind: Number, Str: c.lit}
		if got := v.IsInteger(); got != c.integer {
			t.Errorf("IsInteger(%s) = %v, want %v", c.lit, got, c.integer)
		}
		if got, ok := v.CompareInt(1); !ok || got != c.cmp1 {
			t.Errorf("CompareInt(%s, 1) = %d, %v, want %d", c.lit, got, ok, c.cmp1)
		}
		if got := v.Sign(); got != c.sign {
			t.Errorf("Sign(%s) = %d, want %d", c.lit, got, c.sign)
		}
		n, ok := v.Int()
		if ok != c.fits || (ok && n != c.i64) {
			t.Errorf("Int(%s) = %d, %v, want %d, %v", c.lit, n, ok, c.i64, c.fits)
		}
	}
	for _, v := range []*Value{nil, {Kind: String, Str: "1"}} {
		if v.IsInteger() {
			t.Errorf("IsInteger(%v) = true, want false", v)
		}
		if _, ok := v.CompareInt(0); ok {
			t.Errorf("CompareInt(%v) ok, want not a number", v)
		}
	}
}

// Issue 22: a response that also carries "method" is a response, by its
// "result"/"error" and "id" (the upstream checker accepts it as one).
func TestClassifyResponseWithMethod(t *testing.T) {
	for _, c := range []struct {
		js   string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","result":{"effects":[]}}`, "response"},
		{`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","error":{"code":-32601,"message":"x"}}`, "response"},
		// With params it is a request carrying a response member: BASE-1
		// reports the member; the message is still the request it looks like.
		{`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{},"result":{}}`, "request"},
		{`{"jsonrpc":"2.0","id":1,"method":"hooks/intercept","params":{}}`, "request"},
		{`{"jsonrpc":"2.0","method":"hooks/observe","params":{}}`, "notification"},
		{`{"jsonrpc":"2.0","method":"hooks/observe"}`, "notification"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "response"},
	} {
		f := &Frame{Raw: []byte(c.js)}
		f.Decode()
		got := "nil"
		switch f.Msg.(type) {
		case *Request:
			got = "request"
		case *Notification:
			got = "notification"
		case *Response:
			got = "response"
		}
		if got != c.want {
			t.Errorf("classify(%s) = %s, want %s", c.js, got, c.want)
		}
	}
}
