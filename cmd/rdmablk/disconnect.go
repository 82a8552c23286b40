package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/internal/attach"
)

func newDisconnect(_ *globals) *cobra.Command {
	var runDir string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "disconnect NAME...",
		Short: "Stop attachments: detach /dev/nbdX, stop the NBD export, flush and disconnect",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
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
