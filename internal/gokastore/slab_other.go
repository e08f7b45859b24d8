//go:build !unix

package gokastore

// newSlab is an empty slice with room for n bytes; off unix systems it is on
// the Go heap.
func newSlab(n int) (b []byte, mapped bool) { return make([]byte, 0, n), false }

func freeSlab([]byte) {}
