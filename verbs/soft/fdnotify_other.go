//go:build !linux

package soft

// Without eventfd the soft CQ does not implement verbs.FDNotifier; these
// keep cq.go's calls compiling (detached is never set).
func (cq *completionQueue) fdSignalLocked() {}
func (cq *completionQueue) closeFDLocked()  {}
