#!/usr/bin/env python3
"""Independent vectors for nvme/auth, computed with Python's hashlib/hmac/
zlib/base64 and pow() from the formulas in the NVMe Base spec and Linux
drivers/nvme/common/auth.c (see ../doc.go). Regenerate with
  python3 gen_python_vectors.py > python-vectors.json
These check our encodings and formulas against a second implementation;
kernel-captured vectors (kernel-*.json, see kernel_vectors_test.go) check
them against Linux."""
import base64, hashlib, hmac, json, struct, subprocess, zlib

H = {1: hashlib.sha256, 2: hashlib.sha384, 3: hashlib.sha512}

def secret(hh, key):
    raw = key + struct.pack('<I', zlib.crc32(key) & 0xffffffff)
    return 'DHHC-1:%02d:%s:' % (hh, base64.b64encode(raw).decode())

def transform(hh, key, nqn):
    if hh == 0:
        return key
    return hmac.new(key, nqn.encode() + b'NVMe-over-Fabrics', H[hh]).digest()

def resp(h, key, c, seq, tid, role, n1, n2):
    msg = c + struct.pack('<IHB', seq, tid, 0) + role + n1.encode() + b'\0' + n2.encode()
    return hmac.new(key, msg, H[h]).digest()

def aug(h, sess, c):
    return hmac.new(H[h](sess).digest(), c, H[h]).digest()

def prime(bits):
    pem = '/tmp/ffdhe%d.pem' % bits
    subprocess.run(['openssl', 'genpkey', '-genparam', '-algorithm', 'DH', '-pkeyopt', 'group:ffdhe%d' % bits, '-out', pem], check=True)
    out = subprocess.run(['openssl', 'asn1parse', '-in', pem], check=True, capture_output=True, text=True).stdout
    return int(out.splitlines()[1].split(':')[-1], 16)

hostnqn = 'nqn.2014-08.org.nvmexpress:uuid:0c5e1d8a-6f5e-4d6b-9d35-8f2f5a4c1b21'
subnqn = 'nqn.2024-01.io.rdmablk:vol1'
v = {'hostnqn': hostnqn, 'subnqn': subnqn, 'secrets': [], 'responses': [], 'dh': []}
for hh in range(4):
    for n in (32, 48, 64):
        key = bytes((i * 7 + hh + n) & 0xff for i in range(n))
        v['secrets'].append({'hh': hh, 'key': key.hex(), 'secret': secret(hh, key),
                             'transformed_host': transform(hh, key, hostnqn).hex()})
for h in (1, 2, 3):
    hl = H[h]().digest_size
    kh = transform(h, bytes(range(hl)), hostnqn)
    kc = transform(0, bytes(range(100, 100 + 32)), subnqn)
    c1 = bytes((0x11 * i) & 0xff for i in range(hl))
    c2 = bytes((0x23 * i + 5) & 0xff for i in range(hl))
    sess = bytes((i * 13) & 0xff for i in range(256))
    v['responses'].append({'hash': h, 'kh': kh.hex(), 'kc': kc.hex(), 'c1': c1.hex(), 'c2': c2.hex(),
        's1': 0x89abcdef, 's2': 7, 'tid': 0x0102, 'session': sess.hex(),
        'r1': resp(h, kh, c1, 0x89abcdef, 0x0102, b'HostHost', hostnqn, subnqn).hex(),
        'r2': resp(h, kc, c2, 7, 0x0102, b'Controller', subnqn, hostnqn).hex(),
        'aug1': aug(h, sess, c1).hex(),
        'psk': hmac.new(sess, c1 + c2, H[h]).digest().hex()})
for gid, bits in ((1, 2048), (2, 3072), (3, 4096), (4, 6144), (5, 8192)):
    p = prime(bits)
    x = int.from_bytes(hashlib.sha512(b'x%d' % bits).digest()[:40], 'big')
    y = int.from_bytes(hashlib.sha512(b'y%d' % bits).digest()[:40], 'big')
    nb = bits // 8
    gx, gy = pow(2, x, p), pow(2, y, p)
    v['dh'].append({'group': gid, 'x': '%x' % x, 'pub': gx.to_bytes(nb, 'big').hex(),
                    'peer': gy.to_bytes(nb, 'big').hex(), 'shared': pow(gy, x, p).to_bytes(nb, 'big').hex()})
print(json.dumps(v, indent=1))
