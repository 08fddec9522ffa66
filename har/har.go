// Package har reads HTTP Archive (HAR 1.2) files, as browsers, mitmproxy
// (its hardump addon) and Charles export them, and turns the exchanges that
// carry AHP traffic into the frames and notes the HTTP tap produces, so a
// HAR is audited exactly as a capture of the same exchanges would be.
//
// An entry is AHP traffic when it POSTs a JSON-RPC message whose method is
// an AHP method (hooks/…), or when it POSTs to a URL such a message went to
// earlier in the file. Every other entry is counted and skipped, never a
// finding. The reader streams: memory holds one entry at a time.
//
// Credentials are handled as the HTTP tap handles them: Authorization
// values are remembered, replaced in every body, URL and header of the
// audit copy, and never returned.
package har

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ahp-tap/ahp-tap/httpaudit"
	"github.com/ahp-tap/ahp-tap/tap"
)

// MaxAuditBody caps the audit copy of one body, as the HTTP tap's
// --max-audit-body default does; a larger body is audited as a truncated
// copy (TAP-1).
const MaxAuditBody = 16 << 20

// Sniff reports whether the start of a file is a HAR document: a JSON
// object whose first member is "log", holding an object.
func Sniff(head []byte) bool {
	b := bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	if !bytes.HasPrefix(b, []byte("{")) {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	if !bytes.HasPrefix(b, []byte(`"log"`)) {
		return false
	}
	b = bytes.TrimLeft(b[len(`"log"`):], " \t\r\n")
	if !bytes.HasPrefix(b, []byte(":")) {
		return false
	}
	b = bytes.TrimLeft(b[1:], " \t\r\n")
	return len(b) == 0 || b[0] == '{'
}

// Stats count what a Reader saw.
type Stats struct {
	// Entries is the number of HAR entries read.
	Entries int
	// Audited is the number of entries that carried AHP traffic.
	Audited int
	// Skipped is the number of entries that did not (other requests of a
	// browser session, say).
	Skipped int
	// NotRecorded is the number of AHP exchanges not audited because the
	// HAR does not hold their bodies (saved without content, as browsers
	// do by default): counted in Skipped too, reported as a TAP-1 fact.
	NotRecorded int
	// FirstNotRecorded is the entry number of the first of them.
	FirstNotRecorded int
}

// The HAR 1.2 structures ahp-tap reads (http://www.softwareishard.com/blog/har-12-spec/).
// Unknown fields, and custom fields starting with "_", are ignored.
type (
	entry struct {
		StartedDateTime string   `json:"startedDateTime"`
		Time            float64  `json:"time"`
		Request         request  `json:"request"`
		Response        response `json:"response"`
		Timings         timings  `json:"timings"`
		Connection      string   `json:"connection"`
	}
	request struct {
		Method   string    `json:"method"`
		URL      string    `json:"url"`
		Headers  []nv      `json:"headers"`
		PostData *postData `json:"postData"`
		BodySize int64     `json:"bodySize"`
	}
	response struct {
		Status   int     `json:"status"`
		Headers  []nv    `json:"headers"`
		Content  content `json:"content"`
		BodySize int64   `json:"bodySize"`
	}
	nv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	postData struct {
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		// Encoding is not in HAR 1.2 for postData, but some exporters
		// write "base64" here as for content.
		Encoding string `json:"encoding"`
	}
	content struct {
		Size     int64   `json:"size"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Encoding string  `json:"encoding"`
	}
	timings struct {
		Blocked, DNS, Connect, Send, Wait, Receive, SSL float64
	}
)

// A Reader yields the AHP exchanges of a HAR file in file order.
type Reader struct {
	dec       *json.Decoder
	stats     Stats
	endpoints map[string]bool   // URLs an AHP message was posted to
	creds     httpaudit.Builder // the audit copy of each exchange, redacted as the HTTP tap's
	done      bool
}

// NewReader positions a reader at the entries of the HAR document in r.
// The JSON text is cut as it is read (cutter): memory is bounded in bytes
// whatever the file holds, and a body longer than MaxAuditBody is audited
// as a truncated prefix (TAP-1).
func NewReader(r io.Reader) (*Reader, error) {
	dec := json.NewDecoder(newCutter(r))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, ErrNotHAR
	}
	if err := seek(dec, "log", '{'); err != nil {
		return nil, err
	}
	if err := seek(dec, "entries", '['); err != nil {
		return nil, err
	}
	return &Reader{dec: dec, endpoints: map[string]bool{}}, nil
}

// seek reads the members of the object dec is in up to the one named key,
// skipping the others, and then the opening delimiter of its value.
func seek(dec *json.Decoder, key string, open json.Delim) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNotHAR, err)
		}
		if k, _ := t.(string); k == key {
			if t, err := dec.Token(); err != nil || t != open {
				return fmt.Errorf("%w: %q is not a JSON %s", ErrNotHAR, key, map[json.Delim]string{'{': "object", '[': "array"}[open])
			}
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("%w: %v", ErrNotHAR, err)
		}
	}
	return fmt.Errorf("%w: no %q member", ErrNotHAR, key)
}

// Stats returns what the reader has seen so far.
func (r *Reader) Stats() Stats { return r.stats }

// Next returns the frames and notes of the next AHP exchange: the
// harness's request frame, then the backend's response frame (a 200 with a
// body) or a note (any other answer, or none). It returns io.EOF after the
// last entry.
func (r *Reader) Next() ([]tap.Item, error) {
	for !r.done {
		if !r.dec.More() {
			r.done = true
			break
		}
		var e entry
		if err := r.dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("HAR entry %d: %v", r.stats.Entries+1, err)
		}
		r.stats.Entries++
		items, err := r.exchange(&e)
		if err != nil {
			return nil, fmt.Errorf("HAR entry %d: %v", r.stats.Entries, err)
		}
		if items == nil {
			r.stats.Skipped++
			continue
		}
		if len(items) == 0 { // AHP traffic whose bodies the HAR does not hold
			r.stats.Skipped++
			r.stats.NotRecorded++
			if r.stats.FirstNotRecorded == 0 {
				r.stats.FirstNotRecorded = r.stats.Entries
			}
			continue
		}
		r.stats.Audited++
		return items, nil
	}
	return nil, io.EOF
}

// exchange converts one entry, or returns nil when it is not AHP traffic,
// and an empty list when it is but the HAR does not hold its bodies.
func (r *Reader) exchange(e *entry) ([]tap.Item, error) {
	if !strings.EqualFold(e.Request.Method, http.MethodPost) {
		return nil, nil
	}
	var reqBody body
	reqRecorded := e.Request.BodySize <= 0
	if pd := e.Request.PostData; pd != nil && pd.Text != nil {
		b, err := decodeBody(*pd.Text, pd.Encoding, e.Request.BodySize)
		if err != nil {
			return nil, fmt.Errorf("request body: %v", err)
		}
		reqBody, reqRecorded = b, true
	}
	endpoint := endpointOf(e.Request.URL)
	if !r.endpoints[endpoint] {
		if !isAHPMessage(reqBody.bytes) {
			return nil, nil
		}
		r.endpoints[endpoint] = true
	}
	// A body the HAR does not hold (text absent, size > 0: a browser's
	// export without content) is not an empty body: the exchange is not
	// audited, and said so once (TAP-1), rather than judged on bodies
	// that were never recorded (issue 21 item 6).
	c := e.Response.Content
	respRecorded := c.Text != nil || (c.Size <= 0 && e.Response.BodySize <= 0)
	if !reqRecorded || (e.Response.Status > 0 && !respRecorded) {
		return []tap.Item{}, nil
	}

	start, err := parseTime(e.StartedDateTime)
	if err != nil {
		return nil, err
	}
	reqHeader := header(e.Request.Headers)
	if e.Request.PostData != nil && e.Request.PostData.MimeType != "" && len(reqHeader.Values("Content-Type")) == 0 {
		// Some exporters keep the request's content type only here.
		reqHeader.Set("Content-Type", e.Request.PostData.MimeType)
	}
	conn := "har"
	if e.Connection != "" {
		conn = "har:" + e.Connection
	}
	reqMeta := r.creds.RequestText(strings.ToUpper(e.Request.Method), e.Request.URL, reqHeader)
	url := reqMeta.URL
	reqMeta.Upstream = url
	items := []tap.Item{{Frame: r.frame(tap.FromHarness, start, conn, reqBody, reqMeta)}}

	status := e.Response.Status
	if status <= 0 {
		// A browser records status 0 for a request that got no answer
		// (cancelled, blocked, connection failed): nothing to audit but
		// that the exchange ended without one, as when a harness gives up.
		items = append(items, tap.Item{Note: &tap.Note{Kind: tap.NoteHarnessGone, Time: end(start, e), Conn: conn,
			Detail: "the HAR records no response (status 0)"}})
		return items, nil
	}
	var respBody body
	if c.Text != nil {
		size := c.Size
		if size <= 0 {
			size = e.Response.BodySize
		}
		respBody, err = decodeBody(*c.Text, c.Encoding, size)
		if err != nil {
			return nil, fmt.Errorf("response body: %v", err)
		}
	}
	respMeta := r.creds.Response(status, header(e.Response.Headers), url, 0)
	respMeta.LatencyMs = latency(e)
	at := end(start, e)
	if status == http.StatusOK && len(respBody.bytes) > 0 {
		items = append(items, tap.Item{Frame: r.frame(tap.FromBackend, at, conn, respBody, respMeta)})
		return items, nil
	}
	// A response without a JSON-RPC message: a note, its body still
	// searched for credentials (AUTH-1), as the HTTP tap does.
	items = append(items, tap.Item{Note: r.creds.ResponseNote(at, conn, httpaudit.Body{Bytes: respBody.bytes, Truncated: respBody.cut, Size: int64(respBody.size)}, respMeta)})
	return items, nil
}

func (r *Reader) frame(dir tap.Direction, t time.Time, conn string, b body, m *tap.HTTPMeta) *tap.Frame {
	f := r.creds.Frame(dir, t, conn, httpaudit.Body{Bytes: b.bytes, Truncated: b.cut, Size: int64(b.size)}, m)
	if len(f.Raw) > MaxAuditBody {
		f.Raw, f.Truncated = f.Raw[:MaxAuditBody], true
	}
	return f
}

// Findings are the facts about what the reader could not audit, for the
// end of the HAR: exchanges whose bodies it does not hold (TAP-1).
func (r *Reader) Findings() []tap.Finding {
	st := r.stats
	if st.NotRecorded == 0 {
		return nil
	}
	fd := tap.TapIncomplete.At(nil, tap.Warn, "", "body not recorded: %d AHP %s of this HAR (the first at entry %d) could not be audited (content.text absent, size > 0: the HAR was saved without content, as browsers do unless told); export it with content to audit them",
		st.NotRecorded, plural(st.NotRecorded, "exchange", "exchanges"), st.FirstNotRecorded)
	fd.Conn = "har"
	return []tap.Finding{fd}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// isAHPMessage reports whether body is a JSON-RPC message (or a batch of
// them) calling an AHP method.
func isAHPMessage(body []byte) bool {
	var one struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
		Method  string           `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return strings.HasPrefix(one.Method, "hooks/")
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if isAHPMessage(m) {
				return true
			}
		}
	}
	return false
}

// endpointOf is a URL without its fragment.
func endpointOf(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// A body is a decoded HAR body: at most MaxAuditBody bytes of it when it
// was cut (the text was longer than the reader keeps), with its size when
// the HAR says it.
type body struct {
	bytes []byte
	cut   bool
	size  int // the whole body's size when known (cut), else 0
}

// decodeBody decodes a HAR text. A text the reader cut (cutText) is
// decoded as far as it goes: base64 up to its last whole quantum.
func decodeBody(text, encoding string, size int64) (body, error) {
	text, cut := cutText(text)
	b := body{cut: cut}
	if cut && size > 0 {
		b.size = int(size)
	}
	switch strings.ToLower(encoding) {
	case "":
		b.bytes = []byte(text)
	case "base64":
		if cut {
			text = text[:len(text)/4*4]
		}
		d, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			// Some exporters drop the padding.
			d2, err2 := base64.RawStdEncoding.DecodeString(strings.TrimRight(text, "="))
			if err2 != nil {
				return body{}, fmt.Errorf("base64 text: %v", err)
			}
			d = d2
		}
		b.bytes = d
	default:
		return body{}, fmt.Errorf("unknown encoding %q", encoding)
	}
	if len(b.bytes) > MaxAuditBody {
		b.bytes, b.cut = b.bytes[:MaxAuditBody], true
	}
	if b.cut && b.size == 0 {
		b.size = len(b.bytes) + 1 // longer than what is kept; how much is not known
	}
	return b, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("startedDateTime %q is not an ISO 8601 time", s)
}

// end is when the response headers arrived: the start plus the entry's
// time without the time spent receiving the body.
func end(start time.Time, e *entry) time.Time {
	ms := e.Time
	if e.Timings.Receive > 0 && e.Timings.Receive <= ms {
		ms -= e.Timings.Receive
	}
	if ms < 0 {
		ms = 0
	}
	return start.Add(time.Duration(ms * float64(time.Millisecond)))
}

// latency is the time to the response headers, in milliseconds.
func latency(e *entry) float64 {
	if l := e.Timings.Send + e.Timings.Wait; l > 0 {
		return l
	}
	return e.Time
}

func header(h []nv) http.Header {
	out := http.Header{}
	for _, kv := range h {
		if strings.HasPrefix(kv.Name, ":") {
			continue // HTTP/2 pseudo-headers (:method, :path…) are not headers
		}
		out.Add(kv.Name, kv.Value)
	}
	return out
}

// ErrNotHAR is returned by NewReader for a document without log.entries.
var ErrNotHAR = errors.New("not a HAR document")
