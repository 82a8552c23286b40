package nbd

// Protocol constants (doc/proto.md). All integers are big-endian.

// Handshake magics.
const (
	magicInit       = 0x4e42444d41474943 // "NBDMAGIC"
	magicOpt        = 0x49484156454F5054 // "IHAVEOPT"
	magicOptReply   = 0x0003e889045565a9
	magicRequest    = 0x25609513
	magicSimpleRepl = 0x67446698
)

// Handshake flags (server) and client flags.
const (
	flagFixedNewstyle  = 1 << 0
	flagNoZeroes       = 1 << 1
	cflagFixedNewstyle = 1 << 0
	cflagNoZeroes      = 1 << 1
)

// Options.
const (
	optExportName       = 1
	optAbort            = 2
	optList             = 3
	optStartTLS         = 5
	optInfo             = 6
	optGo               = 7
	optStructuredReply  = 8
	optListMetaContext  = 9
	optSetMetaContext   = 10
	optExtendedHeaders  = 11
	maxOptionLength     = 64 << 10 // longer option data ends the connection
	maxExportNameLength = 4096
)

// Option reply types.
const (
	repAck           = 1
	repServer        = 2
	repInfo          = 3
	repFlagError     = 1 << 31
	repErrUnsup      = repFlagError | 1
	repErrPolicy     = repFlagError | 2
	repErrInvalid    = repFlagError | 3
	repErrUnknown    = repFlagError | 6
	repErrShutdown   = repFlagError | 7
	repErrBlockSzReq = repFlagError | 8
)

// Information types of NBD_REP_INFO.
const (
	infoExport      = 0
	infoName        = 1
	infoDescription = 2
	infoBlockSize   = 3
)

// Transmission flags (sent with the export).
const (
	TFlagHasFlags       = 1 << 0
	TFlagReadOnly       = 1 << 1
	TFlagSendFlush      = 1 << 2
	TFlagSendFUA        = 1 << 3
	TFlagRotational     = 1 << 4
	TFlagSendTrim       = 1 << 5
	TFlagSendWriteZeros = 1 << 6
	TFlagCanMultiConn   = 1 << 8
)

// Command types.
const (
	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdCache       = 5
	cmdWriteZeroes = 6
)

// Command flags.
const (
	cmdFlagFUA    = 1 << 0
	cmdFlagNoHole = 1 << 1
)

// Error values of replies (Linux errno numbers, as the protocol fixes them).
const (
	errPerm      = 1
	errIO        = 5
	errNoMem     = 12
	errInval     = 22
	errNoSpc     = 28
	errOverflow  = 75
	errNotSup    = 95
	errShutdown  = 108
	requestSize  = 28
	replyHdrSize = 16
)

// Size limits advertised in NBD_INFO_BLOCK_SIZE.
const (
	// MaxRequest is the largest READ/WRITE payload accepted (the
	// advertised maximum block size).
	MaxRequest = 32 << 20
	// preferredBlock is the advertised preferred block size floor.
	preferredBlock = 4096
)
