package agent

import "syscall"

// filesystemBytes returns the size of the filesystem holding dir (0 when
// unknown). It is the one place the cluster asks a filesystem how much it
// can hold; catalogue creates refuse volumes larger than it.
func filesystemBytes(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil || st.Bsize <= 0 {
		return 0
	}
	if st.Blocks > uint64(1<<62)/uint64(st.Bsize) {
		return 1 << 62
	}
	return int64(st.Blocks) * st.Bsize
}
