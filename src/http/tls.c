/* src/http/tls.c - the https side of the server: certificate, key and
 * client CAs read from PEM files, served through GnuTLS' certificate
 * callback (MHD_OPTION_HTTPS_CERT_CALLBACK) so that a reload swaps them
 * without restarting the daemon: a handshake after the reload gets the new
 * certificate, connections already open keep theirs, no request is
 * dropped (docs/security.md).
 *
 * Each load is a generation (certificate chain, key, client CA list). The
 * callback reads the current one atomically; older generations stay
 * allocated until the server stops, since sessions that started with them
 * may still point at them (a reload costs a few KiB).
 *
 * GnuTLS' callback has no user pointer, so the process has at most one
 * https server at a time (a second gets GW_EINVAL).
 *
 * Client certificates: with client CAs, MHD asks every client for a
 * certificate (the CA list given at the start), and every request except
 * /-/healthy and /-/ready is answered 403 unless the client's chain
 * verifies against the current client CAs (auth.c calls
 * gw_tls_verify_client). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include "http/http_int.h"

#define CHAIN_MAX 16
#define PEM_MAX ((size_t)1 << 20)

struct tls_gen {
    gnutls_pcert_st pcert[CHAIN_MAX];
    unsigned n_pcert;
    gnutls_privkey_t key;
    gnutls_x509_trust_list_t cas;   /* NULL: no client certificate asked */
    struct tls_gen *prev;           /* older generations, freed at the end */
};

struct gw_tls {
    char *cert_file, *key_file, *ca_file;
    char *ca_pem;                   /* the client CAs at the start, for MHD */
    pthread_mutex_t mu;             /* reloads */
    struct tls_gen *_Atomic cur;
};

static struct gw_tls *_Atomic the_tls;

static int read_pem(const char *what, const char *path, gnutls_datum_t *d, struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    if (f == NULL) {
        char eb[128];
        return gw_error_set(err, GW_EIO, "cannot read the TLS %s %s: %s", what, path,
                            strerror_r(errno, eb, sizeof eb));
    }
    d->data = malloc(PEM_MAX + 1);
    if (d->data == NULL) {
        fclose(f);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    n = fread(d->data, 1, PEM_MAX + 1, f);
    fclose(f);
    if (n > PEM_MAX || n == 0) {
        free(d->data);
        d->data = NULL;
        return gw_error_set(err, GW_EINVAL, "the TLS %s %s is %s", what, path, n ? "over 1 MiB" : "empty");
    }
    d->data[n] = 0;
    d->size = (unsigned)n;
    return GW_OK;
}

static void gen_free(struct tls_gen *g)
{
    while (g != NULL) {
        struct tls_gen *prev = g->prev;
        for (unsigned i = 0; i < g->n_pcert; i++)
            gnutls_pcert_deinit(&g->pcert[i]);
        if (g->key)
            gnutls_privkey_deinit(g->key);
        if (g->cas)
            gnutls_x509_trust_list_deinit(g->cas, 1);
        free(g);
        g = prev;
    }
}

/* 0 when the key is the private half of the certificate's public key. */
static int key_matches(gnutls_pcert_st *pc, gnutls_privkey_t key)
{
    gnutls_pubkey_t pub;
    gnutls_datum_t a = {NULL, 0}, b = {NULL, 0};
    int same = 0;
    if (gnutls_pubkey_init(&pub) < 0)
        return -1;
    if (gnutls_pubkey_import_privkey(pub, key, 0, 0) >= 0 && gnutls_pubkey_export2(pub, GNUTLS_X509_FMT_DER, &a) >= 0 &&
        gnutls_pubkey_export2(pc->pubkey, GNUTLS_X509_FMT_DER, &b) >= 0)
        same = a.size == b.size && memcmp(a.data, b.data, a.size) == 0;
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return same ? 0 : -1;
}

static int load_cert_key(struct gw_tls *t, struct tls_gen *g, struct gw_error *err)
{
    gnutls_datum_t cert = {NULL, 0}, key = {NULL, 0};
    int rc = read_pem("certificate", t->cert_file, &cert, err), gr;
    if (rc == GW_OK)
        rc = read_pem("key", t->key_file, &key, err);
    if (rc == GW_OK) {
        g->n_pcert = CHAIN_MAX;
        gr = gnutls_pcert_list_import_x509_raw(g->pcert, &g->n_pcert, &cert, GNUTLS_X509_FMT_PEM, 0);
        if (gr < 0) {
            g->n_pcert = 0;
            rc = gw_error_set(err, GW_EINVAL, "the TLS certificate %s does not load: %s", t->cert_file,
                              gnutls_strerror(gr));
        }
    }
    if (rc == GW_OK && gnutls_privkey_init(&g->key) < 0) {
        g->key = NULL;
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    if (rc == GW_OK && (gr = gnutls_privkey_import_x509_raw(g->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0)
        rc = gw_error_set(err, GW_EINVAL, "the TLS key %s does not load: %s", t->key_file, gnutls_strerror(gr));
    if (rc == GW_OK && key_matches(&g->pcert[0], g->key) != 0)
        rc = gw_error_set(err, GW_EINVAL, "the TLS key %s does not belong to the certificate %s", t->key_file,
                          t->cert_file);
    free(cert.data);
    if (key.data != NULL)
        memset(key.data, 0, key.size);
    free(key.data);
    return rc;
}

static int load_cas(struct gw_tls *t, struct tls_gen *g, char **pem_out, struct gw_error *err)
{
    gnutls_datum_t ca = {NULL, 0};
    int rc = read_pem("client CA file", t->ca_file, &ca, err), gr;
    if (rc != GW_OK)
        return rc;
    if (gnutls_x509_trust_list_init(&g->cas, 0) < 0) {
        g->cas = NULL;
        free(ca.data);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    gr = gnutls_x509_trust_list_add_trust_mem(g->cas, &ca, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
    if (gr <= 0)
        rc = gw_error_set(err, GW_EINVAL, "the TLS client CA file %s holds no certificate that loads%s%s",
                          t->ca_file, gr < 0 ? ": " : "", gr < 0 ? gnutls_strerror(gr) : "");
    if (rc == GW_OK && pem_out != NULL)
        *pem_out = (char *)ca.data;
    else
        free(ca.data);
    return rc;
}

static int load_gen(struct gw_tls *t, struct tls_gen **out, char **pem_out, struct gw_error *err)
{
    struct tls_gen *g = calloc(1, sizeof *g);
    int rc;
    if (g == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    rc = load_cert_key(t, g, err);
    if (rc == GW_OK && t->ca_file != NULL)
        rc = load_cas(t, g, pem_out, err);
    if (rc != GW_OK) {
        gen_free(g);
        return rc;
    }
    *out = g;
    return GW_OK;
}

void gw_tls_free(struct gw_tls *t)
{
    struct gw_tls *expect = t;
    if (t == NULL)
        return;
    atomic_compare_exchange_strong(&the_tls, &expect, NULL);
    gen_free(atomic_load(&t->cur));
    pthread_mutex_destroy(&t->mu);
    free(t->cert_file);
    free(t->key_file);
    free(t->ca_file);
    free(t->ca_pem);
    free(t);
}

int gw_tls_new(struct gw_tls **out, const struct gw_http_security *sec, struct gw_error *err)
{
    struct gw_tls *t, *expect = NULL;
    struct tls_gen *g = NULL;
    int rc;
    if ((sec->tls_cert_file == NULL) != (sec->tls_key_file == NULL))
        return gw_error_set(err, GW_EINVAL, "https needs both a certificate file and a key file");
    if (sec->tls_client_ca_file != NULL && sec->tls_cert_file == NULL)
        return gw_error_set(err, GW_EINVAL, "a client CA file needs https (a certificate and key file)");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
        MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES)
        return gw_error_set(err, GW_EUNSUPPORTED, "this libmicrohttpd was built without TLS (GnuTLS)");
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    pthread_mutex_init(&t->mu, NULL);
    t->cert_file = strdup(sec->tls_cert_file);
    t->key_file = strdup(sec->tls_key_file);
    t->ca_file = sec->tls_client_ca_file ? strdup(sec->tls_client_ca_file) : NULL;
    if (!t->cert_file || !t->key_file || (sec->tls_client_ca_file && !t->ca_file))
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    else
        rc = load_gen(t, &g, &t->ca_pem, err);
    if (rc == GW_OK && !atomic_compare_exchange_strong(&the_tls, &expect, t)) {
        gen_free(g);
        rc = gw_error_set(err, GW_EINVAL, "only one https server per process");
    }
    if (rc != GW_OK) {
        gw_tls_free(t);
        return rc;
    }
    atomic_store(&t->cur, g);
    *out = t;
    return GW_OK;
}

int gw_tls_reload(struct gw_tls *t, struct gw_error *err)
{
    struct tls_gen *g = NULL;
    int rc = load_gen(t, &g, NULL, err);
    if (rc != GW_OK)
        return rc;
    pthread_mutex_lock(&t->mu);
    g->prev = atomic_load(&t->cur);
    atomic_store(&t->cur, g);
    pthread_mutex_unlock(&t->mu);
    return GW_OK;
}

const char *gw_tls_client_ca_pem(const struct gw_tls *t)
{
    return t ? t->ca_pem : NULL;
}

static int cert_cb(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
                   unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    struct gw_tls *t = atomic_load(&the_tls);
    struct tls_gen *g = t ? atomic_load(&t->cur) : NULL;
    (void)session;
    (void)req_ca_dn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    if (g == NULL)
        return -1;
    *pcert = g->pcert;
    *pcert_length = g->n_pcert;
    *pkey = g->key;
    return 0;
}

void *gw_tls_cert_callback(void)
{
    return (void *)cert_cb;
}

int gw_tls_verify_client(struct gw_tls *t, struct MHD_Connection *conn, char *msg, size_t cap)
{
    struct tls_gen *g = t ? atomic_load(&t->cur) : NULL;
    const union MHD_ConnectionInfo *ci;
    const gnutls_datum_t *peers;
    gnutls_x509_crt_t crts[CHAIN_MAX];
    unsigned n = 0, k = 0, status = 0;
    int rc = -1;
    if (g == NULL || g->cas == NULL)
        return 0;
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    peers = ci && ci->tls_session ? gnutls_certificate_get_peers((gnutls_session_t)ci->tls_session, &n) : NULL;
    if (peers == NULL || n == 0) {
        snprintf(msg, cap, "forbidden: a client certificate signed by the configured client CA is required");
        return -1;
    }
    if (n > CHAIN_MAX)
        n = CHAIN_MAX;
    for (; k < n; k++) {
        if (gnutls_x509_crt_init(&crts[k]) < 0)
            break;
        if (gnutls_x509_crt_import(crts[k], &peers[k], GNUTLS_X509_FMT_DER) < 0) {
            gnutls_x509_crt_deinit(crts[k]);
            break;
        }
    }
    if (k == n && gnutls_x509_trust_list_verify_crt(g->cas, crts, n, 0, &status, NULL) >= 0 && status == 0)
        rc = 0;
    for (unsigned i = 0; i < k; i++)
        gnutls_x509_crt_deinit(crts[i]);
    if (rc != 0)
        snprintf(msg, cap, "forbidden: the client certificate does not verify against the client CA (status 0x%x)",
                 status);
    return rc;
}
