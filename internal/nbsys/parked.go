package nbsys

// Events of WatchParked: the epoll(7) values of EPOLLIN and EPOLLOUT,
// named here so that portable callers need no Linux constants.
const (
	ParkedIn  uint32 = 0x1
	ParkedOut uint32 = 0x4
)
