//go:build ibverbs

#include "rb.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int rb_probe_devices(int *num)
{
	struct ibv_device **list;

	errno = 0;
	list = ibv_get_device_list(num);
	if (!list)
		return errno ? errno : ENODEV;
	ibv_free_device_list(list);
	return 0;
}

int rb_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	return 0;
}

struct rdma_event_channel *rb_create_event_channel(int *err)
{
	struct rdma_event_channel *ch;

	errno = 0;
	ch = rdma_create_event_channel();
	*err = ch ? 0 : (errno ? errno : ENODEV);
	return ch;
}

int rb_get_cm_event(struct rdma_event_channel *ch, struct rb_cm_ev *out)
{
	struct rdma_cm_event *ev;
	const struct rdma_conn_param *p;

	if (rdma_get_cm_event(ch, &ev))
		return errno;
	memset(out, 0, offsetof(struct rb_cm_ev, pd));
	out->id = ev->id;
	out->handle = (uintptr_t)ev->id->context;
	out->listen_handle = ev->listen_id ? (uintptr_t)ev->listen_id->context : 0;
	out->event = ev->event;
	out->status = ev->status;
	p = &ev->param.conn;
	out->responder_resources = p->responder_resources;
	out->initiator_depth = p->initiator_depth;
	out->retry_count = p->retry_count;
	out->rnr_retry_count = p->rnr_retry_count;
	out->flow_control = p->flow_control;
	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL && p->private_data && p->private_data_len) {
		out->pd_len = p->private_data_len;
		if (out->pd_len > (int)sizeof(out->pd))
			out->pd_len = sizeof(out->pd);
		memcpy(out->pd, p->private_data, out->pd_len);
	}
	rdma_ack_cm_event(ev);
	return 0;
}

int rb_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, uintptr_t handle)
{
	if (rdma_create_id(ch, id, (void *)handle, RDMA_PS_TCP))
		return errno;
	return 0;
}

void rb_set_handle(struct rdma_cm_id *id, uintptr_t handle)
{
	id->context = (void *)handle;
}

int rb_sockaddr(struct sockaddr_storage *ss, int family, const uint8_t *ip, int port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, ip, 4);
		return 0;
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	memcpy(&s6->sin6_addr, ip, 16);
	return 0;
}

int rb_format_addr(struct rdma_cm_id *id, int peer, char *buf, int len)
{
	struct sockaddr *sa = peer ? rdma_get_peer_addr(id) : rdma_get_local_addr(id);
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		return snprintf(buf, len, "%s:%d", host, ntohs(s->sin_port));
	}
	if (sa->sa_family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		return snprintf(buf, len, "[%s]:%d", host, ntohs(s->sin6_port));
	}
	buf[0] = 0;
	return 0;
}

int rb_connect(struct rdma_cm_id *id, const uint8_t *pd, int pd_len, int rr, int idepth, int retry, int rnr, int flow, int accept)
{
	struct rdma_conn_param p;
	int ret;

	memset(&p, 0, sizeof(p));
	p.private_data = pd_len ? pd : NULL;
	p.private_data_len = pd_len;
	p.responder_resources = rr;
	p.initiator_depth = idepth;
	p.retry_count = retry;
	p.rnr_retry_count = rnr;
	p.flow_control = flow;
	ret = accept ? rdma_accept(id, &p) : rdma_connect(id, &p);
	return ret ? errno : 0;
}

int rb_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	return ibv_query_device(ctx, attr);
}

// rb_probe_inline creates a throw-away RC QP with max_sge send SGEs and
// reports the inline size the provider grants for it (0 on failure).
int rb_probe_inline(struct ibv_context *ctx, int max_sge, int max_wr)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_qp_init_attr a;
	int inl = 0;

	if (!pd)
		return 0;
	cq = ibv_create_cq(ctx, 2, NULL, NULL, 0);
	if (!cq)
		goto out;
	memset(&a, 0, sizeof(a));
	a.send_cq = cq;
	a.recv_cq = cq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = max_wr;
	a.cap.max_recv_wr = max_wr;
	a.cap.max_send_sge = max_sge;
	a.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &a);
	if (qp) {
		inl = a.cap.max_inline_data;
		ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);
out:
	ibv_dealloc_pd(pd);
	return inl;
}

int rb_get_async_event(struct ibv_context *ctx, struct rb_async_ev *out)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(ctx, &ev))
		return errno;
	memset(out, 0, sizeof(*out));
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_CQ_ERR:
		out->cq_handle = (uintptr_t)ev.element.cq->cq_context;
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp_num = ev.element.qp->qp_num;
		break;
	default:
		break;
	}
	ibv_ack_async_event(&ev);
	return 0;
}

struct ibv_cq *rb_create_cq(struct ibv_context *ctx, int cqe, uintptr_t handle, struct ibv_comp_channel *ch, int vector)
{
	return ibv_create_cq(ctx, cqe, (void *)handle, ch, vector);
}

int rb_get_cq_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch, &cq, &ctx))
		return errno;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

int rb_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
		 struct ibv_qp_cap *cap, int sig_all)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.cap = *cap;
	a.sq_sig_all = sig_all;
	if (rdma_create_qp(id, pd, &a))
		return errno;
	*cap = a.cap;
	return 0;
}

int rb_qp_to_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int rb_query_qp(struct ibv_qp *qp, int *state, int *timeout, int *retry, int *rnr, int *rd_atomic, int *dest_rd_atomic)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int ret = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &ia);

	if (ret)
		return ret;
	*state = a.qp_state;
	*timeout = a.timeout;
	*retry = a.retry_cnt;
	*rnr = a.rnr_retry;
	*rd_atomic = a.max_rd_atomic;
	*dest_rd_atomic = a.max_dest_rd_atomic;
	return 0;
}

int rb_post_send(struct ibv_qp *qp, const struct rb_swr *in, struct ibv_sge *sges,
		 struct ibv_send_wr *w, int n)
{
	struct ibv_send_wr *bad = NULL;
	int i, ret;

	for (i = 0; i < n; i++) {
		const struct rb_swr *s = &in[i];
		struct ibv_send_wr *d = &w[i];

		memset(d, 0, sizeof(*d));
		d->wr_id = s->id;
		d->next = i + 1 < n ? &w[i + 1] : NULL;
		d->sg_list = s->nsge ? &sges[s->sge_off] : NULL;
		d->num_sge = s->nsge;
		d->opcode = (enum ibv_wr_opcode)s->opcode;
		d->send_flags = s->flags;
		switch (s->opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			d->wr.rdma.remote_addr = s->raddr;
			d->wr.rdma.rkey = s->rkey;
			break;
		}
		if (s->opcode == IBV_WR_SEND_WITH_IMM || s->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			d->imm_data = htonl(s->imm);
		if (s->opcode == IBV_WR_SEND_WITH_INV)
			d->invalidate_rkey = s->imm;
	}
	ret = ibv_post_send(qp, w, &bad);
	if (!ret)
		return n;
	return (ret << 16) | (int)(bad ? bad - w : 0);
}

int rb_post_recv(struct ibv_qp *qp, const struct rb_rwr *in, struct ibv_sge *sges,
		 struct ibv_recv_wr *w, int n)
{
	struct ibv_recv_wr *bad = NULL;
	int i, ret;

	for (i = 0; i < n; i++) {
		w[i].wr_id = in[i].id;
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		w[i].sg_list = in[i].nsge ? &sges[in[i].sge_off] : NULL;
		w[i].num_sge = in[i].nsge;
	}
	ret = ibv_post_recv(qp, w, &bad);
	if (!ret)
		return n;
	return (ret << 16) | (int)(bad ? bad - w : 0);
}

int rb_poll(struct ibv_cq *cq, struct rb_wc *out, int n)
{
	struct ibv_wc wc[RB_BATCH];
	int total = 0;

	while (total < n) {
		int want = n - total < RB_BATCH ? n - total : RB_BATCH;
		int got = ibv_poll_cq(cq, want, wc);
		int i;

		if (got < 0)
			return total ? total : -1;
		for (i = 0; i < got; i++) {
			struct rb_wc *o = &out[total + i];

			o->id = wc[i].wr_id;
			o->status = wc[i].status;
			o->opcode = wc[i].opcode;
			o->flags = wc[i].wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
			o->pad = 0;
			o->byte_len = wc[i].byte_len;
			o->qp_num = wc[i].qp_num;
			o->imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
			o->inv_rkey = (wc[i].wc_flags & IBV_WC_WITH_INV) ? wc[i].invalidated_rkey : 0;
			o->vendor_err = wc[i].vendor_err;
		}
		total += got;
		if (got < want)
			break;
	}
	return total;
}
