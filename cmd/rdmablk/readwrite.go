package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
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
	var fua bool
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Write a file or stdin to a namespace at a byte offset",
		Long: "Write a file or stdin to a namespace at a byte offset. The input is padded\n" +
			"with zeroes to a whole block; the data is flushed before the command returns.",
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
				return fmt.Errorf("offset must be a multiple of the block size %d", bs)
			}
			buf := make([]byte, chunk)
			var total int64
			for {
				n, rerr := io.ReadFull(r, buf)
				if n > 0 {
					p := buf[:n]
					if rem := int64(n) % bs; rem != 0 {
						pad := bs - rem
						clear(buf[n : int64(n)+pad])
						p = buf[:int64(n)+pad]
					}
					if off+total+int64(len(p)) > ns.Size() {
						return fmt.Errorf("input does not fit: namespace is %d bytes", ns.Size())
					}
					if fua {
						err = ns.WriteFUA(p, off+total)
					} else {
						_, err = ns.WriteAt(p, off+total)
					}
					if err != nil {
						return fmt.Errorf("write at %d: %w", off+total, err)
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
			stderrf("wrote %d bytes at offset %d (flushed)\n", total, off)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&offset, "offset", "0", "byte offset (block multiple; K/M/G suffixes)")
	f.StringVarP(&in, "input", "i", "-", "input file (- for stdin)")
	f.Uint32Var(&nsid, "nsid", 0, "namespace ID (default: the first)")
	f.BoolVar(&fua, "fua", false, "write with force unit access")
	return cmd
}
