package file

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
)

// TestAsyncLargeIOCompletes: O_DIRECT writes and reads of 4 KiB to 1 MiB
// through the io_uring path, plugged and not, all complete. A device
// completion reaches the CQ through task work run on the submitting
// thread, not from an io-wq worker: an eventfd registered for
// asynchronous completions only (IORING_REGISTER_EVENTFD_ASYNC) is never
// signalled for it, and the reaper would wait forever — rdmablkd hung
// on every `rdmablk write` that way once. The deadline turns a hang into
// a failure.
func TestAsyncLargeIOCompletes(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096, Size: 8 << 20})
	if b.ring == nil {
		t.Skip("no io_uring fast path here")
	}
	done := make(chanDone, 1)
	wait := func(what string) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: no completion after a minute", what)
		}
	}
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		buf := AlignedBuffer(n, 4096)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		for _, plug := range []bool{false, true} {
			for k := range 8 {
				lba := uint64(k * n / 4096)
				if plug {
					b.Plug()
				}
				if !b.SubmitWrite(buf, lba, blockdev.WriteFUA, done) {
					t.Fatalf("SubmitWrite %d refused", n)
				}
				if plug {
					b.Unplug()
				}
				wait("write")
				if plug {
					b.Plug()
				}
				if !b.SubmitRead(buf, lba, done) {
					t.Fatalf("SubmitRead %d refused", n)
				}
				if plug {
					b.Unplug()
				}
				wait("read")
			}
		}
	}
}
