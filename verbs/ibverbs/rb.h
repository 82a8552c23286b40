// rb.h: the C side of package ibverbs (build tag ibverbs). Small helpers so
// that one cgo call serves a whole batch of work requests or completions,
// and event records are copied and acknowledged in the same call.
#ifndef RDMABLK_RB_H
#define RDMABLK_RB_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// RB_BATCH is the number of work requests one cgo call posts.
enum { RB_BATCH = 32 };

// rb_swr is the compact send work request Go writes into C memory.
struct rb_swr {
	uint64_t id;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t imm;     // immediate data (host order) or the rkey to invalidate
	uint32_t sge_off; // first SGE in the QP's SGE array
	uint16_t nsge;
	uint8_t opcode;   // ibv_wr_opcode
	uint8_t flags;    // ibv_send_flags (low 8 bits)
};

// rb_rwr is the compact receive work request.
struct rb_rwr {
	uint64_t id;
	uint32_t sge_off;
	uint16_t nsge;
	uint16_t pad;
};

// rb_wc has the layout of Go's verbs.WorkCompletion (checked at compile
// time on the Go side); rb_poll writes straight into the caller's slice.
struct rb_wc {
	uint64_t id;
	uint8_t status;
	uint8_t opcode;
	uint8_t flags;
	uint8_t pad;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t imm;
	uint32_t inv_rkey;
	uint32_t vendor_err;
};

enum {
	RB_WC_SIZE = sizeof(struct rb_wc),
	RB_WC_OFF_STATUS = offsetof(struct rb_wc, status),
	RB_WC_OFF_BYTE_LEN = offsetof(struct rb_wc, byte_len),
	RB_WC_OFF_QP_NUM = offsetof(struct rb_wc, qp_num),
	RB_WC_OFF_IMM = offsetof(struct rb_wc, imm),
	RB_WC_OFF_INV = offsetof(struct rb_wc, inv_rkey),
	RB_WC_OFF_VENDOR = offsetof(struct rb_wc, vendor_err),
	RB_SGE_SIZE = sizeof(struct ibv_sge),
	RB_SGE_OFF_LENGTH = offsetof(struct ibv_sge, length),
	RB_SGE_OFF_LKEY = offsetof(struct ibv_sge, lkey),
};

// rb_cm_ev is a connection-manager event copied out of librdmacm's record
// (which is acknowledged before rb_get_cm_event returns).
struct rb_cm_ev {
	struct rdma_cm_id *id;  // only meaningful for CONNECT_REQUEST (new id)
	uintptr_t handle;       // id->context
	uintptr_t listen_handle;
	int event;
	int status;
	int pd_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t flow_control;
	uint8_t pd[256];
};

// rb_async_ev is an asynchronous device event, acknowledged.
struct rb_async_ev {
	int type;
	uintptr_t cq_handle; // cq->cq_context for CQ events
	uint32_t qp_num;     // for QP events
};

int rb_probe_devices(int *num);
int rb_set_nonblock(int fd);
struct rdma_event_channel *rb_create_event_channel(int *err);
int rb_get_cm_event(struct rdma_event_channel *ch, struct rb_cm_ev *out);
int rb_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, uintptr_t handle);
void rb_set_handle(struct rdma_cm_id *id, uintptr_t handle);
int rb_sockaddr(struct sockaddr_storage *ss, int family, const uint8_t *ip, int port);
int rb_format_addr(struct rdma_cm_id *id, int peer, char *buf, int len);
int rb_connect(struct rdma_cm_id *id, const uint8_t *pd, int pd_len, int rr, int idepth, int retry, int rnr, int flow, int accept);
int rb_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr);
int rb_probe_inline(struct ibv_context *ctx, int max_sge, int max_wr);
int rb_get_async_event(struct ibv_context *ctx, struct rb_async_ev *out);
struct ibv_cq *rb_create_cq(struct ibv_context *ctx, int cqe, uintptr_t handle, struct ibv_comp_channel *ch, int vector);
int rb_get_cq_event(struct ibv_comp_channel *ch);
int rb_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
		 struct ibv_qp_cap *cap, int sig_all);
int rb_qp_to_error(struct ibv_qp *qp);
int rb_query_qp(struct ibv_qp *qp, int *state, int *timeout, int *retry, int *rnr, int *rd_atomic, int *dest_rd_atomic);
// rb_post_send and rb_post_recv return (errno << 16) | number posted.
int rb_post_send(struct ibv_qp *qp, const struct rb_swr *in, struct ibv_sge *sges,
		 struct ibv_send_wr *scratch, int n);
int rb_post_recv(struct ibv_qp *qp, const struct rb_rwr *in, struct ibv_sge *sges,
		 struct ibv_recv_wr *scratch, int n);
int rb_poll(struct ibv_cq *cq, struct rb_wc *out, int n);

#endif
