// Package configs holds the annotated example configurations, systemd
// units and fio job files of rdmablk. The default daemon configuration is
// embedded from here.
package configs

import _ "embed"

// DaemonDefault is rdmablkd.yaml, the daemon's built-in configuration.
//
//go:embed rdmablkd.yaml
var DaemonDefault []byte
