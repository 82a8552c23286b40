package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/initiator"
)

// chunk is the unit the read and write commands move per call.
const chunk = 1 << 20

func newRead(g *globals) *cobra.Command {
	var offset, length, out string
	var nsid uint32
	cmd := &cobra.Command{
		Use:   "read",
		Short: "Read a byte range of a namespace to a file or stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			off, err := parseBytes(offset)
			if err != nil {
				return fmt.Errorf("--offset: %w", err)
			}
			n, err := parseBytes(length)
			if err != nil {
				return fmt.Errorf("--length: %w", err)
			}
			c, ns, err := g.openNamespace(cmd.Context(), nsid)
			if err != nil {
				return err
			}
			defer c.Close()
			bs := int64(ns.BlockSize())
			if off%bs != 0 || n%bs != 0 {
				return fmt.Errorf("offset and length must be multiples of the block size %d", bs)
			}
			if err := checkRange(ns, off, n); err != nil {
				return err
			}
			if n == 0 {
				n = ns.Size() - off
			}
			w := io.Writer(os.Stdout)
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			buf := make([]byte, min(chunk, n))
			for done := int64(0); done < n; {
				p := buf[:min(int64(len(buf)), n-done)]
				if _, err := ns.ReadAt(p, off+done); err != nil {
					return fmt.Errorf("read at %d: %w", off+done, err)
				}
				if _, err := w.Write(p); err != nil {
					return err
				}
				done += int64(len(p))
			}
			if f, ok := w.(*os.File); ok && f != os.Stdout {
				return f.Close()
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&offset, "offset", "0", "byte offset (block multiple; K/M/G suffixes)")
	f.StringVar(&length, "length", "0", "bytes to read (block multiple; 0: to the end)")
	f.StringVarP(&out, "output", "o", "-", "output file (- for stdout)")
	f.Uint32Var(&nsid, "nsid", 0, "namespace ID (default: the first)")
	return cmd
}

func newWrite(g *globals) *cobra.Command {
	var offset, in string
	var nsid uint32
	var fua, pad bool
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Write a file or stdin to a namespace at a byte offset",
		Long: "Write a file or stdin to a namespace at a byte offset (a block multiple).\n" +
			"When the input ends inside a block, the rest of that block keeps what the\n" +
			"namespace held (read-modify-write); --pad fills it with zeroes instead.\n" +
			"The data is flushed before the command returns.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			off, err := parseBytes(offset)
			if err != nil {
				return fmt.Errorf("--offset: %w", err)
			}
			r := io.Reader(os.Stdin)
			if in != "" && in != "-" {
				f, err := os.Open(in)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			c, ns, err := g.openNamespace(cmd.Context(), nsid)
			if err != nil {
				return err
			}
			defer c.Close()
			bs := int64(ns.BlockSize())
			if off%bs != 0 {
				return fmt.Errorf("--offset %d: must be a multiple of the block size %d", off, bs)
			}
			if err := checkRange(ns, off, 0); err != nil {
				return err
			}
			write := func(p []byte, at int64) error {
				if fua {
					return ns.WriteFUA(p, at)
				}
				_, err := ns.WriteAt(p, at)
				return err
			}
			buf := make([]byte, chunk)
			var total int64
			for {
				n, rerr := io.ReadFull(r, buf)
				if n > 0 {
					at := off + total
					p := buf[:n]
					if rem := int64(n) % bs; rem != 0 {
						p = buf[:int64(n)-rem+bs]
					}
					if at+int64(len(p)) > ns.Size() {
						return fmt.Errorf("input does not fit: %d bytes at offset %d, namespace %d is %d bytes (wrote %d bytes before)",
							n, at, ns.NSID(), ns.Size(), total)
					}
					if len(p) > n {
						if err := fillTail(ns, p, n, at, pad); err != nil {
							return err
						}
					}
					if err := write(p, at); err != nil {
						return fmt.Errorf("write at %d: %w (wrote %d bytes before)", at, err, total)
					}
					total += int64(n)
				}
				if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
					break
				}
				if rerr != nil {
					return rerr
				}
			}
			if err := ns.Flush(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d bytes at offset %d (flushed)\n", total, off)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&offset, "offset", "0", "byte offset (block multiple; K/M/G suffixes)")
	f.StringVarP(&in, "input", "i", "-", "input file (- for stdin)")
	f.Uint32Var(&nsid, "nsid", 0, "namespace ID (default: the first)")
	f.BoolVar(&fua, "fua", false, "write with force unit access")
	f.BoolVar(&pad, "pad", false, "fill the rest of a partly written last block with zeroes instead of keeping its old bytes")
	return cmd
}

// fillTail completes p, whose first n bytes are input and whose length is
// a whole number of blocks, with the bytes the namespace holds after the
// input in its last block (read-modify-write), or zeroes with pad.
func fillTail(ns *initiator.Namespace, p []byte, n int, at int64, pad bool) error {
	bs := ns.BlockSize()
	last := p[len(p)-bs:]
	if pad {
		clear(p[n:])
		return nil
	}
	keep := make([]byte, bs)
	lastAt := at + int64(len(p)-bs)
	if _, err := ns.ReadAt(keep, lastAt); err != nil {
		return fmt.Errorf("read-modify-write of the last block at %d: %w (or pass --pad)", lastAt, err)
	}
	inLast := n - (len(p) - bs) // input bytes in the last block
	copy(last[inLast:], keep[inLast:])
	return nil
}

// checkRange refuses an offset at or past the end of the namespace and a
// length (0: to the end) that runs past it, naming the namespace's size.
func checkRange(ns *initiator.Namespace, off, n int64) error {
	size := ns.Size()
	if off < 0 || off >= size {
		return fmt.Errorf("--offset %d is past the end of namespace %d (%d bytes, %s)", off, ns.NSID(), size, humanBytes(size))
	}
	if n < 0 || n > size-off {
		return fmt.Errorf("--offset %d --length %d runs past the end of namespace %d (%d bytes, %s)", off, n, ns.NSID(), size, humanBytes(size))
	}
	return nil
}
