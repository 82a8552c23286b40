// Package regmem provides memory for RDMA registration: anonymous mappings
// outside the Go heap, backed by huge pages when the host has them, and
// registration with a protection domain in chunks of at most MaxChunk
// bytes (the PVRDMA limit on one user memory region).
//
// # Ownership and lifetimes
//
// A Region owns its mapping from Alloc until Free; Bytes is valid until
// Free. A Registration owns its memory regions until Close; it does not
// own the memory, which must stay mapped until the Registration is closed
// and no work request can still reach it. Neither type is safe for
// concurrent mutation; their read-only methods (Bytes, Addr, LKey) may be
// called from any goroutine.
//
// # Huge pages
//
// Alloc first asks for explicit 2 MiB huge pages (MAP_HUGETLB, available
// when the administrator reserved them: vm.nr_hugepages); otherwise it maps
// normal pages, and AdviseHuge asks for transparent huge pages
// (MADV_HUGEPAGE) on the parts that are worth it, which the kernel applies
// when it can. Region.Huge reports whether explicit huge pages were used.
package regmem
