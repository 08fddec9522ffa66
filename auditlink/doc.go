// Package auditlink is the out-of-process audit link of the stdio tap
// (docs/stdio.md, "Process model"): the forwarding process the harness
// starts hands the audit copies of its link to an audit process in a
// session of its own, so that a SIGKILL of the harness's process group
// never costs the findings of what was forwarded.
//
// The forwarding side is a Link: a Mirror (a stdio.Mirror) that writes
// each read's copy into a pipe to an audit process of its own
// (StartProcess), or into a unix socket to the audit process shared by
// the per_event taps of a --state directory (Rendezvous.Connect), with one
// non-blocking write before the bytes are forwarded.
//
// The audit side reads the link with a Reader (on a thread of its own, as
// fast as it comes, into a queue bounded in records and bytes; past the
// bound a chunk is dropped and counted, never waited for) and feeds one
// tap.Session with Feed. The shared audit process is a Server.
//
// # The link's records
//
// Every record is a 32-byte little-endian header and a payload of at most
// MaxRecord bytes:
//
//	0  kind      RecordChunk (bytes read), RecordNote (a tap.Note, JSON),
//	             RecordEnd (the forwarding process ended cleanly: a
//	             stdio.Result, JSON, whose Deadline bounds the audit)
//	1  dir       tap.Direction of a chunk or of an EOF note
//	2  flags     flagLoss: copies of dir were dropped just before
//	3  reserved
//	4  length    uint32, of the payload
//	8  time      int64, Unix ns of the read
//	16 seq       uint64, numbered by the writer
//	24 lost      uint64, lines of dir lost just before this record
//
// A link that ends without RecordEnd was killed: the audit records a
// `killed` note. A link that ends in the middle of a record, or with a
// record over MaxRecord, is cut there.
//
// # The shared audit process's messages
//
// On the socket the tap first sends one hello line (JSON, at most
// MaxHello bytes: {"v":Version,"key":KEY,"conn":CONN}); the server answers
// with messages of a kind byte, a little-endian uint32 length and a
// payload of at most MaxMessage bytes: MsgReady (the link is being read),
// MsgDiag (a notice for the tap's stderr), MsgDone (the link's findings,
// capture and state are written) or MsgRefused (not served here: why).
// The records then follow the hello on the same socket.
package auditlink
