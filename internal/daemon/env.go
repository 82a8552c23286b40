package daemon

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/rdmablk/rdmablk/internal/confkeys"
)

// EnvPrefix starts every environment variable the daemon reads:
// RDMABLKD_<KEY> with the key's dots replaced by underscores and upper
// case (transport.max_queue_depth → RDMABLKD_TRANSPORT_MAX_QUEUE_DEPTH).
const EnvPrefix = "RDMABLKD_"

// envListeners is the one list that the environment can set: listen
// addresses separated by commas or spaces.
const envListeners = EnvPrefix + "LISTENERS"

// setting is one configuration key that the environment can set.
type setting struct {
	key string
	typ reflect.Type
}

// envSettings lists every leaf key of Config by environment variable
// name. Lists of structs (volumes, subsystems) are listed with a nil
// type: they exist but cannot be given through the environment.
func envSettings() map[string]setting {
	out := map[string]setting{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for k, ft := range confkeys.Fields(t, "mapstructure") {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			switch {
			case et.Kind() == reflect.Struct && et != reflect.TypeOf(time.Duration(0)):
				walk(et, key)
				continue
			case et.Kind() == reflect.Slice && et.Elem().Kind() == reflect.Struct:
				ft = nil
			}
			out[envName(key)] = setting{key: key, typ: ft}
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return out
}

func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// bindEnv binds every leaf key to its variable, so that a key the
// embedded default does not mention (cluster.node_id) is still read from
// the environment.
func bindEnv(v *viper.Viper) {
	for name, s := range envSettings() {
		if s.typ != nil {
			_ = v.BindEnv(s.key, name) // fails only for an empty key
		}
	}
}

// checkEnv reports every RDMABLKD_* variable that names no setting (with
// the nearest one), whose value does not parse as its setting's type, or
// that sets a list the environment cannot express. It also applies
// RDMABLKD_LISTENERS unless listenFlag is set (the --listen flag wins).
func checkEnv(v *viper.Viper, environ []string, listenFlag bool) error {
	settings := envSettings()
	names := make([]string, 0, len(settings))
	for n := range settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		s, ok := settings[name]
		switch {
		case !ok:
			msg := fmt.Sprintf("environment: unknown variable %s", name)
			if n := confkeys.Nearest(name, names); n != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", n)
			}
			errs = append(errs, errors.New(msg))
		case name == envListeners:
			addrs := strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' })
			if len(addrs) == 0 {
				errs = append(errs, fmt.Errorf("environment: %s=%q: want listen addresses separated by commas (host:port,host:port)", name, val))
				continue
			}
			if !listenFlag {
				setListeners(v, addrs)
			}
		case s.typ == nil:
			errs = append(errs, fmt.Errorf("environment: %s: %s is a list of entries that the environment cannot express; set it in a config file (--config)", name, s.key))
		default:
			if err := parseAs(s.typ, val); err != nil {
				errs = append(errs, fmt.Errorf("environment: %s=%q: %s %w", name, val, s.key, err))
			}
		}
	}
	return errors.Join(errs...)
}

// parseAs checks that val parses as a value of type t, the way the
// configuration decoder will read it.
func parseAs(t reflect.Type, val string) error {
	if want := confkeys.ParseScalar(t, val); want != "" {
		return errors.New("wants " + want)
	}
	return nil
}

// setListeners replaces the configured listeners with addrs.
func setListeners(v *viper.Viper, addrs []string) {
	ls := make([]map[string]any, len(addrs))
	for i, a := range addrs {
		ls[i] = map[string]any{"addr": a}
	}
	v.Set("listeners", ls)
}

// SetListeners replaces the configured listeners (the --listen flag).
func SetListeners(v *viper.Viper, addrs []string) { setListeners(v, addrs) }

// environ is os.Environ, replaceable by tests.
var environ = os.Environ
