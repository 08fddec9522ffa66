package tap

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDueHeapAsContainerHeap: push and pop keep the heap exactly as
// heap.Push and heap.Pop do (the same order among equal deadlines too), so
// deadlines are judged in the same order as before they stopped boxing
// their entries.
func TestDueHeapAsContainerHeap(t *testing.T) {
	t.Parallel() // CPU-bound and self-contained: overlaps the others
	rng := rand.New(rand.NewPCG(27, 5))
	t0 := time.Unix(1_800_000_000, 0)
	var got, want dueHeap
	for i := range 5000 {
		if rng.IntN(3) > 0 || len(want) == 0 {
			e := dueEntry{at: t0.Add(time.Duration(rng.IntN(50)) * time.Millisecond), key: fmt.Sprint(i), seq: uint64(i)}
			got.push(e)
			heap.Push(&want, e)
		} else {
			g, w := got.pop(), heap.Pop(&want).(dueEntry)
			if g != w {
				t.Fatalf("pop %d = %+v, want %+v", i, g, w)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("len = %d, want %d", len(got), len(want))
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("after step %d, entry %d = %+v, want %+v", i, j, got[j], want[j])
			}
		}
	}
}
