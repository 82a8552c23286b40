package testproc

import "fmt"

// SoftVolumeConfig is an rdmablkd configuration for tests: the soft
// provider with profile, one listener on addr (127.0.0.1:0 for an
// ephemeral port), one sparse file volume vol0 of size bytes in dataDir
// with 512-byte blocks, served as namespace 1 of subsystem nqn to any host,
// JSON logs at info (what Daemon.WaitLog reads).
func SoftVolumeConfig(dataDir, profile, addr string, size int64, nqn string) []byte {
	return fmt.Appendf(nil, `data_dir: %s
log: {level: info, format: json}
transport: {provider: soft, profile: %s}
listeners:
  - addr: %s
volumes:
  - {name: vol0, path: vol0.img, size: %d, block_size: 512}
subsystems:
  - nqn: %s
    allow_any_host: true
    namespaces:
      - {nsid: 1, volume: vol0}
`, dataDir, profile, addr, size, nqn)
}
