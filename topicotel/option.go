package topicotel

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
)

// An Option configures Register.
//
// The zero Option has no effect. Given more than once, the last option of a
// kind wins.
type Option struct {
	apply func(*config)
}

// config collects the options of one Register.
type config struct {
	attrs attribute.Set // added to every point
}

func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&c)
		}
	}
	return c
}

// Attributes adds kv to every point of the registration: to tell apart
// brokers registered on one MeterProvider, say, with
// attribute.String("broker", "orders"). Of attributes with the same key, the
// last is kept, and the package's own (topic.type and the others) replace
// any of kv with their key. Attributes keeps its own copy of kv.
func Attributes(kv ...attribute.KeyValue) Option {
	set := attribute.NewSet(slices.Clone(kv)...) // NewSet sorts its argument in place
	return Option{apply: func(c *config) { c.attrs = set }}
}
