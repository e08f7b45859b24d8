// Package gokatest has a goka.Context for tests and benchmarks that run a
// goka callback alone, without a processor: one goroutine, no tester
// queue, nothing between the callback and the producer but what goka
// itself does with an emit's options and headers (v1.1.17: the headers of
// WithCtxEmitHeaders copied, then copied again with the processor's
// default headers), so that what a callback's emits cost is what it costs
// in a processor.
package gokatest

import (
	"context"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/lovoo/goka"
)

// Record is the record a Context processes.
type Record struct {
	Topic     goka.Stream
	Key       string
	Partition int32
	Offset    int64
	Headers   goka.Headers
}

// Context is the goka.Context of one record, whose emits go to a producer.
// What it does not implement panics.
type Context struct {
	gokaContext
	// Hold, when set, runs as an Emit begins, before goka would encode the
	// value and hand the record on (a test can hold an emit there).
	Hold     func(topic goka.Stream, key string)
	in       Record
	producer goka.Producer
}

type gokaContext = goka.Context

// New returns the context of in, whose Emit hands its records (their
// values as they are: []byte or nil) to producer. It fails when goka's
// options are no longer what Emit knows how to apply.
func New(in Record, producer goka.Producer) (*Context, error) {
	t := reflect.TypeOf(goka.ContextOption(nil)).In(0).Elem()
	if t.NumField() != 1 || t.Field(0).Type != reflect.TypeOf(goka.Headers(nil)) {
		return nil, fmt.Errorf("gokatest: goka's context options are %v now, not the emit headers alone", t)
	}
	return &Context{in: in, producer: producer}, nil
}

func (c *Context) Context() context.Context { return context.Background() }
func (c *Context) Headers() goka.Headers    { return c.in.Headers }
func (c *Context) Topic() goka.Stream       { return c.in.Topic }
func (c *Context) Key() string              { return c.in.Key }
func (c *Context) Partition() int32         { return c.in.Partition }
func (c *Context) Offset() int64            { return c.in.Offset }

// Emit applies options as goka does, then hands the record to the
// producer with goka's copy of their headers.
func (c *Context) Emit(topic goka.Stream, key string, value any, options ...goka.ContextOption) {
	if c.Hold != nil {
		c.Hold(topic, key)
	}
	var opts ctxOptions
	for _, o := range options {
		(*(*func(*ctxOptions))(unsafe.Pointer(&o)))(&opts)
	}
	v, _ := value.([]byte)
	c.producer.EmitWithHeaders(string(topic), key, v, goka.Headers(nil).Merged(opts.emitHeaders))
}

// ctxOptions has the layout of goka's unexported ctxOptions, which New
// checks.
type ctxOptions struct{ emitHeaders goka.Headers }
