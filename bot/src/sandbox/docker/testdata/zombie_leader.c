/* A hostile helper for the Docker backend's tests, as a pull request could commit it: the main
 * thread leaves with pthread_exit(), so the process shows as a zombie ("Z") in /proc, while a
 * second thread runs on. Given two paths, that thread swaps them (renameat2 RENAME_EXCHANGE) in a
 * loop, as an attacker flipping a directory of the checkout with a symlink would; else it idles. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static char **paths;

static void *work(void *unused) {
    (void)unused;
    for (;;) {
        if (paths[0] && paths[1]) {
            syscall(SYS_renameat2, AT_FDCWD, paths[0], AT_FDCWD, paths[1], RENAME_EXCHANGE);
        } else {
            usleep(1000);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    pthread_t thread;
    paths = argc >= 3 ? argv + 1 : (char *[]){0, 0};
    pthread_create(&thread, 0, work, 0);
    pthread_exit(0);
}
