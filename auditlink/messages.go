package auditlink

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the version of the shared audit process's protocol that a
// tap says in its hello; a server serves only its own.
const Version = 1

// Messages of the shared audit process to a tap.
const (
	MsgReady   = 'R' // the link is being read
	MsgDiag    = 'D' // a notice for the tap's stderr
	MsgDone    = 'A' // the link's findings, capture and state are written
	MsgRefused = 'X' // not served here (payload: why)
)

// MaxMessage caps a message's payload; MaxHello caps the hello line.
const (
	MaxMessage = 1 << 16
	MaxHello   = 4 << 10
)

// A Hello is the first line a tap sends on its connection: the protocol
// version, the rendezvous key (the audit configuration it expects) and
// the link's name.
type Hello struct {
	V    int    `json:"v"`
	Key  string `json:"key"`
	Conn string `json:"conn"`
}

// WriteHello writes h as one line.
func WriteHello(w io.Writer, h Hello) error {
	b, _ := json.Marshal(h)
	_, err := w.Write(append(b, '\n'))
	return err
}

// ReadHello reads a hello line of at most MaxHello bytes and checks it
// against the server's key. The error says what is wrong, for the
// refusal.
func ReadHello(br *bufio.Reader, key string) (Hello, error) {
	var h Hello
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		line = append(line, part...)
		if len(line) > MaxHello {
			return h, fmt.Errorf("hello longer than %d bytes", MaxHello)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return h, fmt.Errorf("no hello: %v", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields() // a hello of another protocol is refused, not half understood
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("bad hello: %v", err)
	}
	switch {
	case h.V != Version:
		return h, fmt.Errorf("protocol version %d is not served here (this audit process speaks %d)", h.V, Version)
	case h.Key != key:
		return h, errors.New("another audit configuration is served here")
	case h.Conn == "" || len(h.Conn) > 256:
		return h, errors.New("bad hello: no link name")
	}
	return h, nil
}

// WriteMsg writes one message (payload at most MaxMessage bytes).
func WriteMsg(w io.Writer, kind byte, payload []byte) error {
	if len(payload) > MaxMessage {
		return fmt.Errorf("message of %d bytes exceeds %d", len(payload), MaxMessage)
	}
	b := make([]byte, 5+len(payload))
	b[0] = kind
	binary.LittleEndian.PutUint32(b[1:], uint32(len(payload)))
	copy(b[5:], payload)
	_, err := w.Write(b)
	return err
}

// ReadMsg reads one message, refusing one over MaxMessage bytes.
func ReadMsg(r io.Reader) (kind byte, payload []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if n > MaxMessage {
		return 0, nil, fmt.Errorf("message of %d bytes exceeds %d", n, MaxMessage)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return h[0], payload, nil
}
