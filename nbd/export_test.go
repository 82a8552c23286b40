package nbd

// WithWriterGoroutine makes o's server write replies from one goroutine
// per connection instead of the completing goroutine (benchmark only).
func WithWriterGoroutine(o Options) Options {
	o.writerGoroutine = true
	return o
}
