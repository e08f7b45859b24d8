//go:build unix

package gokastore

import "syscall"

// newSlab is an empty slice with room for n bytes, mapped outside the Go
// heap (mapped), or on the heap when the mapping fails.
func newSlab(n int) (b []byte, mapped bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, 0, n), false
	}
	return b[:0], true
}

// freeSlab unmaps a slab that newSlab mapped.
func freeSlab(b []byte) { _ = syscall.Munmap(b[:cap(b)]) }
