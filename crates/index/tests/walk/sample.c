/* Sample C for the table walk test: every pattern of queries/c.scm, and near misses. */
#include <stdio.h>
#define MAX 16
#define SQUARE(x) ((x) * (x))

typedef struct point { int x, y; } point_t;
typedef int (*callback_t)(int);
typedef union value { int i; float f; } value_t;
struct forward;
union forward_u;
enum forward_e;
enum color { RED, GREEN = 2, BLUE };

int square(int x);
int *alloc_ints(size_t n), count(void);
static char *name_of(const struct point *p);
extern void (*signal_handler(int sig))(int);

struct list {
    struct list *next;
    value_t value;
    int (*cmp)(const void *, const void *);
};

int square(int x) { return x * x; }

static char *name_of(const struct point *p) {
    char *s = malloc(32);
    snprintf(s, 32, "(%d, %d) \"square(1)\"", p->x, p->y);
    return s;
}

point_t **make_points(int n) {
    point_t **ps = calloc(n, sizeof(point_t *));
    for (int i = 0; i < n; i++) {
        ps[i] = (point_t *)malloc(sizeof(point_t));
        ps[i]->x = SQUARE(i);
        list_push(&ps[i]->next, ops.cmp(a, b));
        obj->vtable->draw(obj);
        (*fp)(3);
    }
    // comment with call(x) and type_t
    return ps;
}

int main(int argc, char **argv) {
    struct list l = {0};
    enum color c = RED;
    printf("%c %d\n", 'x', square(argc));
    return make_points(c) != NULL;
}
