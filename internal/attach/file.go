package attach

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/confkeys"
)

// File is the service configuration (`rdmablk serve --config FILE`).
type File struct {
	// Provider and Profile select the verbs provider (as the CLI flags).
	Provider string `yaml:"provider"`
	Profile  string `yaml:"profile"`
	// RunDir overrides DefaultRunDir.
	RunDir string `yaml:"run_dir"`
	// Attachments are started in order.
	Attachments []Config `yaml:"attachments"`
}

// LoadFile reads and validates a service configuration.
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("attach: %s: %w", path, err)
	}
	// A typo'd key (queus:, pahts:) is an error naming the key and the
	// nearest valid one, never a silently ignored setting.
	if err := confkeys.CheckYAML(path, b, &File{}, "yaml"); err != nil {
		return nil, err
	}
	if f.Provider == "" {
		f.Provider = "auto"
	}
	if f.Profile == "" {
		f.Profile = "default"
	}
	if f.RunDir == "" {
		f.RunDir = DefaultRunDir()
	}
	seen := map[string]bool{}
	for i := range f.Attachments {
		if err := f.Attachments[i].Validate(f.RunDir); err != nil {
			return nil, err
		}
		if seen[f.Attachments[i].Name] {
			return nil, fmt.Errorf("attach: attachment %q defined twice", f.Attachments[i].Name)
		}
		seen[f.Attachments[i].Name] = true
	}
	return &f, nil
}

// Run starts every attachment (an attachment that fails to start is
// logged and skipped), then waits until ctx ends or every attachment was
// disconnected, and stops the rest. It fails only when none started.
func Run(ctx context.Context, cfgs []Config, opts initiator.Options, runDir string, log *slog.Logger) error {
	var running []*Attachment
	var errs []error
	for _, c := range cfgs {
		a, err := Start(ctx, c, opts, runDir)
		if err != nil {
			log.Error("attachment failed to start", "attachment", c.Name, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
			continue
		}
		running = append(running, a)
	}
	if len(running) == 0 && len(cfgs) > 0 {
		return errors.Join(errs...)
	}
	done := make(chan *Attachment, len(running))
	for _, a := range running {
		go func(a *Attachment) {
			select {
			case <-a.Disconnected():
				done <- a
			case <-ctx.Done():
			}
		}(a)
	}
	left := len(running)
	for left > 0 {
		select {
		case a := <-done:
			log.Info("disconnect requested", "attachment", a.Name())
			a.Stop()
			left--
		case <-ctx.Done():
			for _, a := range running {
				a.Stop()
			}
			return nil
		}
	}
	return nil
}
