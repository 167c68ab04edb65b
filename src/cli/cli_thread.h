/* cli/cli_thread.h - the start and stop of serve's background threads
 * (compaction, downsampling, alerts): one thread per job that sleeps on a
 * condition variable and leaves when its stop flag is set. */
#ifndef GW_CLI_THREAD_H
#define GW_CLI_THREAD_H

#include <pthread.h>

/* Initialises mu and cv and starts fn(arg) on *th. GW_OK, or GW_ENOMEM
 * with mu and cv destroyed again. */
int gw_cli_thread_start(pthread_t *th, pthread_mutex_t *mu, pthread_cond_t *cv, void *(*fn)(void *), void *arg);
/* Sets *stop under mu, wakes the thread and joins it; mu and cv stay
 * initialised (the caller destroys them). */
void gw_cli_thread_stop(pthread_t th, pthread_mutex_t *mu, pthread_cond_t *cv, int *stop);

#endif /* GW_CLI_THREAD_H */
