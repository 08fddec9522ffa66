package auditlink

import (
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ahp-tap/ahp-tap/stdio"
	"github.com/ahp-tap/ahp-tap/tap"
)

// recordLoss is a record a Reader makes itself, never on the wire: it
// carries the loss of dir (chunks it dropped) ahead of a record of
// another direction, so that Feed counts it in order.
const recordLoss = 0xff

// Default bounds of a Reader's queue.
const (
	DefaultReaderDepth = tap.DefaultQueue
	DefaultReaderBytes = 4 << 20
)

// ReaderConfig bounds the records a Reader holds that Feed has not taken.
type ReaderConfig struct {
	// Depth is the most records queued (0: DefaultReaderDepth).
	Depth int
	// Bytes is the most payload bytes queued (0: DefaultReaderBytes).
	Bytes int64
	// OwnThread reads on a thread of its own, made at the process's
	// priority when the Reader starts, for a process that then lowers
	// the thread of the goroutine that takes the records (Server). An
	// audit process that lowers all of its threads alike has no need of
	// it: a goroutine pinned to a thread costs two threads' futex wait
	// and wake on every record.
	OwnThread bool
}

// A Reader reads an audit link on a goroutine of its own (see OwnThread), as
// fast as the link delivers, into a queue bounded by its ReaderConfig.
// Past the bound a chunk is dropped and counted (its direction is
// resynchronised at the next newline, and its lines are not audited,
// TAP-1) rather than waited for: the link is never left full, so the
// forwarding process's end record, which bounds the audit's time, arrives
// as soon as it is written. Notes and the end record are never dropped.
type Reader struct {
	cfg  ReaderConfig
	mu   sync.Mutex
	cond *sync.Cond
	q    []Record // records not yet taken; q[head:] are waiting
	head int
	size int64 // payload bytes waiting
	err  error // what ended the link, once read
	// loss and lines are, by direction, the chunks dropped since the last
	// record of that direction was queued.
	loss  [3]bool
	lines [3]uint64

	deadline atomic.Int64  // Unix ns: the end record's Deadline; 0 before it
	dropped  atomic.Uint64 // chunks this reader dropped
	active   chan struct{} // a token after each record read (Active)
}

// NewReader starts reading the link r. It returns once its thread runs.
func NewReader(r io.Reader, cfg ReaderConfig) *Reader {
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultReaderDepth
	}
	if cfg.Bytes <= 0 {
		cfg.Bytes = DefaultReaderBytes
	}
	rd := &Reader{cfg: cfg, active: make(chan struct{}, 1)}
	rd.cond = sync.NewCond(&rd.mu)
	started := make(chan struct{})
	go func() {
		if cfg.OwnThread {
			// A thread of its own, made now at the process's priority,
			// so that lowering the checks' thread never slows the reading.
			runtime.LockOSThread()
		}
		close(started)
		rd.read(NewRecordReader(r))
	}()
	<-started
	return rd
}

func (rd *Reader) read(rr *RecordReader) {
	for {
		rec, err := rd.next(rr)
		if errors.Is(err, errSkipped) {
			continue
		}
		rd.mu.Lock()
		if err != nil {
			rd.err = err
			rd.cond.Broadcast()
			rd.mu.Unlock()
			return
		}
		if rec.Kind == RecordEnd {
			var res stdio.Result
			if json.Unmarshal(rec.Payload, &res) == nil && !res.Deadline.IsZero() {
				rd.deadline.Store(res.Deadline.UnixNano())
			}
		}
		rd.put(rec)
		rd.mu.Unlock()
		select {
		case rd.active <- struct{}{}:
		default: // a token is waiting already
		}
	}
}

// errSkipped is next's way of saying it dropped the record it read.
var errSkipped = errors.New("record dropped")

// next reads the next record. A chunk that finds the queue full is
// dropped as it is read: its payload is skipped, not copied (only its
// lines are counted), so that a reader falling behind spends nothing on
// what it throws away; next then returns errSkipped.
func (rd *Reader) next(rr *RecordReader) (Record, error) {
	rec, n, err := rr.header()
	if err != nil {
		return rec, err
	}
	if rec.Kind == RecordChunk {
		rd.mu.Lock()
		full := rd.fullLocked(n)
		rd.mu.Unlock()
		if full {
			lines, err := rr.skip(n)
			if err != nil {
				return Record{}, err
			}
			rd.mu.Lock()
			rd.dropLocked(rec, lines)
			rd.mu.Unlock()
			return Record{}, errSkipped
		}
	}
	rec.Payload = make([]byte, n)
	if _, err := io.ReadFull(rr.br, rec.Payload); err != nil {
		return Record{}, unexpected(err)
	}
	return rec, nil
}

// fullLocked reports whether a payload of n bytes finds no room in the
// queue (rd.mu held).
func (rd *Reader) fullLocked(n int) bool {
	return len(rd.q)-rd.head >= rd.cfg.Depth || rd.size+int64(n) > rd.cfg.Bytes
}

// dropLocked drops the chunk rec (its payload holding lines lines) and
// counts it (rd.mu held).
func (rd *Reader) dropLocked(rec Record, lines uint64) {
	d := rec.Dir
	if d != tap.FromHarness && d != tap.FromBackend {
		d = 0
	}
	rd.loss[d] = true
	rd.lines[d] += rec.Lost + lines
	// The dropped record may have carried the other direction's loss.
	if rec.LossOther && d != 0 {
		rd.loss[otherStream(d)] = true
	}
	rd.dropped.Add(1)
}

// put queues rec, with rd.mu held. A chunk got its room when next read
// it (only Feed changes the queue since, and it only takes from it).
func (rd *Reader) put(rec Record) {
	stream := rec.Dir == tap.FromHarness || rec.Dir == tap.FromBackend
	waiting := len(rd.q) - rd.head
	// Notes and the end record are few (a hostile peer's flood of them
	// waits for room instead).
	for waiting >= 2*rd.cfg.Depth+16 && rd.err == nil {
		rd.cond.Wait()
		waiting = len(rd.q) - rd.head
	}
	if stream {
		// Both directions' losses go with the next record of either (see
		// flagLossOther).
		other := otherStream(rec.Dir)
		rec.Loss = rec.Loss || rd.loss[rec.Dir]
		rec.LossOther = rec.LossOther || rd.loss[other]
		rec.Lost += rd.lines[rec.Dir] + rd.lines[other]
		rd.loss[rec.Dir], rd.lines[rec.Dir] = false, 0
		rd.loss[other], rd.lines[other] = false, 0
	} else {
		// A record of no direction (the end, a process note) carries
		// nothing: the losses still pending go before it.
		for d := range rd.loss {
			if rd.loss[d] || rd.lines[d] > 0 {
				rd.q = append(rd.q, Record{Kind: recordLoss, Dir: tap.Direction(d), Loss: rd.loss[d], Lost: rd.lines[d], Time: rec.Time})
				rd.loss[d], rd.lines[d] = false, 0
			}
		}
	}
	rd.q = append(rd.q, rec)
	rd.size += int64(len(rec.Payload))
	rd.cond.Broadcast()
}

// Next returns the next record, waiting for one; then the error that
// ended the link (io.EOF at a clean end of the stream,
// io.ErrUnexpectedEOF in the middle of a record), once every record read
// before it has been taken. Losses the reader still held when the link
// ended come first, as recordLoss records.
func (rd *Reader) Next() (Record, error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	for rd.head == len(rd.q) && rd.err == nil {
		rd.cond.Wait()
	}
	if rd.head == len(rd.q) {
		for d := range rd.loss {
			if rd.loss[d] || rd.lines[d] > 0 {
				rec := Record{Kind: recordLoss, Dir: tap.Direction(d), Loss: rd.loss[d], Lost: rd.lines[d]}
				rd.loss[d], rd.lines[d] = false, 0
				return rec, nil
			}
		}
		return Record{}, rd.err
	}
	rec := rd.q[rd.head]
	rd.q[rd.head] = Record{}
	rd.head++
	rd.size -= int64(len(rec.Payload))
	if rd.head == len(rd.q) {
		rd.q, rd.head = rd.q[:0], 0
	} else if rd.head > 1024 && rd.head*2 > len(rd.q) {
		n := copy(rd.q, rd.q[rd.head:])
		clear(rd.q[n:])
		rd.q, rd.head = rd.q[:n], 0
	}
	rd.cond.Broadcast()
	return rec, nil
}

// NextBefore is Next, but gives up at t when no record has come by then:
// idle reports that (the queue was empty at t, so every record the reader
// had read by then has been taken). A zero t waits as Next does.
func (rd *Reader) NextBefore(t time.Time) (rec Record, err error, idle bool) {
	if t.IsZero() {
		rec, err = rd.Next()
		return rec, err, false
	}
	rd.mu.Lock()
	if rd.head == len(rd.q) && rd.err == nil {
		d := time.Until(t)
		if d <= 0 {
			rd.mu.Unlock()
			return Record{}, nil, true
		}
		wake := time.AfterFunc(d, func() {
			rd.mu.Lock()
			rd.cond.Broadcast()
			rd.mu.Unlock()
		})
		for rd.head == len(rd.q) && rd.err == nil && time.Now().Before(t) {
			rd.cond.Wait()
		}
		wake.Stop()
		if rd.head == len(rd.q) && rd.err == nil {
			rd.mu.Unlock()
			return Record{}, nil, true
		}
	}
	rd.mu.Unlock()
	rec, err = rd.Next()
	return rec, err, false
}

// Discard takes every record to the end of the link (an audit that
// cannot run: the forwarding process never waits on it).
func (rd *Reader) Discard() {
	for _, err := rd.Next(); err == nil; _, err = rd.Next() {
	}
}

// Active gets a token after each record read off the link (one waits at
// most): a way to sleep until the link carries something.
func (rd *Reader) Active() <-chan struct{} { return rd.active }

// Queued returns the payload bytes read off the link and not yet taken.
func (rd *Reader) Queued() int64 {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.size
}

// Dropped returns how many chunks the reader dropped for want of room.
func (rd *Reader) Dropped() uint64 { return rd.dropped.Load() }

// Deadline is the end record's bound on the audit (zero before the end
// record was read, or when it gave none).
func (rd *Reader) Deadline() time.Time {
	if n := rd.deadline.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}
