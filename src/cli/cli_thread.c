/* cli_thread.c - see cli_thread.h. */
#include "cli_thread.h"

#include "gpuwatch/err.h"

int gw_cli_thread_start(pthread_t *th, pthread_mutex_t *mu, pthread_cond_t *cv, void *(*fn)(void *), void *arg)
{
    pthread_mutex_init(mu, NULL);
    pthread_cond_init(cv, NULL);
    if (pthread_create(th, NULL, fn, arg) != 0) {
        pthread_cond_destroy(cv);
        pthread_mutex_destroy(mu);
        return GW_ENOMEM;
    }
    return GW_OK;
}

void gw_cli_thread_stop(pthread_t th, pthread_mutex_t *mu, pthread_cond_t *cv, int *stop)
{
    pthread_mutex_lock(mu);
    *stop = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(mu);
    pthread_join(th, NULL);
}
