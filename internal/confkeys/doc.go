// Package confkeys finds configuration keys that no setting names: the
// typo'd "listners:" or "levle:" that a YAML decoder would silently
// ignore. It walks a YAML document next to the Go type it configures,
// reads the key names from the type's struct tags (mapstructure for the
// daemon's viper configuration, yaml for `rdmablk serve`'s attachment
// file) and reports each unknown key with its line and the nearest valid
// key (edit distance), and each scalar that does not parse as its
// setting's type (an integer, true or false, a duration with a unit: a
// bare "30" for a duration would otherwise be read as 30 ns). A setting
// type implementing ScalarForm may be written as one scalar as well as a
// mapping (rdmablkd's host entries: an NQN alone, or the NQN with its
// DH-HMAC-CHAP secrets).
//
// Ownership: pure functions; no goroutines, no state, nothing retained.
// Callers: internal/daemon (rdmablkd's configuration file and RDMABLKD_*
// environment), and internal/attach may call CheckYAML on its file.
package confkeys
