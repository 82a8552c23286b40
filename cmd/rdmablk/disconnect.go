package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/internal/attach"
)

func newDisconnect(g *globals) *cobra.Command {
	var runDir string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "disconnect [NAME...] | -n NQN",
		Short: "Stop attachments: detach /dev/nbdX, stop the NBD export, flush and disconnect",
		Long: `disconnect stops attachments by name, or every attachment of the subsystem
given with -n/--nqn (as nvme-cli's disconnect -n).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := args
			if g.nqn != "" {
				if len(args) > 0 {
					return errors.New("give attachment names or -n NQN, not both")
				}
				entries, err := attach.List(runDir)
				if err != nil {
					return err
				}
				for _, e := range entries {
					if e.Status != nil && e.Status.NQN == g.nqn {
						names = append(names, e.Name)
					}
				}
				if len(names) == 0 {
					return fmt.Errorf("no attachment of %s in %s (rdmablk list)", g.nqn, runDir)
				}
			}
			if len(names) == 0 {
				return errors.New("name the attachments to disconnect, or give -n NQN (rdmablk list shows them)")
			}
			for _, name := range names {
				if err := attach.Disconnect(runDir, name, timeout); err != nil {
					return err
				}
				fmt.Printf("%s: disconnected\n", name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runDir, "run-dir", attach.DefaultRunDir(), "directory of attachment state and sockets")
	cmd.Flags().DurationVar(&timeout, "wait", 60*time.Second, "how long to wait for the attachment to stop")
	return cmd
}
