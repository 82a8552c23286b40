package nvme

// Admin commands without command-specific fields (NVMe base spec 2.0 §5).

// SetKeepAlive fills a Keep Alive command (§5.24; opcode 18h, no fields),
// zeroing all bytes except flags, CID and SGL1. The host sends it within
// KATO; it carries no data, so SGL1 should be the null descriptor.
func (s *SQE) SetKeepAlive() { s.begin(AdminKeepAlive) }

// SetAsyncEventRequest fills an Asynchronous Event Request (§5.2; opcode
// 0Ch, no fields), zeroing all bytes except flags, CID and SGL1. The
// controller completes it only when an event occurs, so it stays
// outstanding indefinitely.
func (s *SQE) SetAsyncEventRequest() { s.begin(AdminAsyncEvent) }
