/* Layout, top to bottom: a title line, one usage bar per device (all processes together),
 * the table header, the rows, a status line. Keys: see draw_help. The selection follows the
 * (pid, device) it was on across refreshes and sorts. */
#include "live_view.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices.h"
#include "format.h"
#include "reclaim.h"
#include "rows.h"

#define RECLAIM_WAIT_S 5.0
#define MAX_BARS 8

typedef struct view {
    const char *dir;
    int pid_filter;
    double delay;
    top_list list;
    top_row *rows;
    unsigned nrows;
    top_col sort;
    int sel_pid, sel_dev;   /* selected row's key */
    unsigned top;           /* first row shown */
    int paused, help;
    char status[256];
    top_reclaim rec;
    double rec_deadline;
} view;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int row_key_dev(const top_row *r) { return r->dev ? (int)r->dev->device : -1; }

static unsigned selected_index(const view *v)
{
    for (unsigned i = 0; i < v->nrows; i++)
        if (v->rows[i].proc->pid == v->sel_pid && row_key_dev(&v->rows[i]) == v->sel_dev)
            return i;
    for (unsigned i = 0; i < v->nrows; i++) /* same process, another device */
        if (v->rows[i].proc->pid == v->sel_pid)
            return i;
    return 0;
}

static void select_index(view *v, unsigned i)
{
    if (v->nrows == 0)
        return;
    if (i >= v->nrows)
        i = v->nrows - 1;
    v->sel_pid = v->rows[i].proc->pid;
    v->sel_dev = row_key_dev(&v->rows[i]);
}

static void resort(view *v)
{
    top_rows_sort(v->rows, v->nrows, v->sort);
}

static void refresh_data(view *v)
{
    free(v->rows);
    top_list_clear(&v->list);
    top_scan(v->dir, v->pid_filter, 1, &v->list, NULL);
    v->nrows = top_rows_build(&v->list, &v->rows);
    resort(v);
    if (v->nrows && v->sel_pid == 0)
        select_index(v, 0);
}

/* One bar per device (all live processes together), as nvtop draws them: against the
 * device's memory where its processes published it (devices.h). */
static int draw_bars(const view *v, int y)
{
    top_devsum *sums;
    unsigned n = top_devices_sum(&v->list, &sums);
    for (unsigned i = 0; i < n && i < MAX_BARS && y < LINES - 3; i++, y++) {
        char bar[64], text[160];
        top_device_text(&sums[i], text, sizeof text);
        int w = COLS - 8 - 2 - (int)strlen(text);
        if (w > (int)sizeof bar - 3)
            w = (int)sizeof bar - 3;
        if (w < 10)
            w = 10;
        top_device_bar(&sums[i], w, bar);
        mvprintw(y, 0, "DEV%-3u %s %.*s", sums[i].device, bar, COLS - w - 10 > 0 ?
                 COLS - w - 10 : 0, text);
    }
    free(sums);
    return y;
}

static void draw_row(int y, const top_row *r, int selected)
{
    char cell[CA_STATS_CMDLINE_LEN + 16];
    int x = 0;
    if (selected)
        attron(A_REVERSE);
    move(y, 0);
    for (int c = 0; c < COL_COUNT && x < COLS; c++) {
        top_cell(r, (top_col)c, cell, sizeof cell);
        if (c == COL_COMMAND) {
            const char *status = top_row_status(r->proc);
            int room = COLS - x - (int)strlen(status);
            printw("%s%.*s", status, room > 0 ? room : 0, cell);
        } else {
            mvprintw(y, x, c <= COL_USER || c == COL_API ? "%-*.*s " : "%*.*s ", top_col_width[c],
                     top_col_width[c], cell);
            x += top_col_width[c] + 1;
            move(y, x);
        }
    }
    if (selected) {
        clrtoeol();
        chgat(-1, A_REVERSE, 0, NULL);
        attroff(A_REVERSE);
    }
}

static void draw_help(void)
{
    static const char *const lines[] = {
        "cachealloc-top keys",
        "",
        "  up/down, j/k   move the selection",
        "  PgUp/PgDn      move a page",
        "  s, >           sort by the next column",
        "  <              sort by the previous column",
        "  r              reclaim: ask the selected process to free its cache",
        "  p              pause / resume refreshing",
        "  h, ?           this help (any key closes it)",
        "  q              quit",
    };
    int n = (int)(sizeof lines / sizeof *lines), w = 72;
    int y0 = (LINES - n - 2) / 2, x0 = (COLS - w) / 2;
    if (y0 < 0)
        y0 = 0;
    if (x0 < 0)
        x0 = 0;
    for (int i = 0; i < n + 2; i++) {
        move(y0 + i, x0);
        int edge = i == 0 || i == n + 1;
        for (int k = 0; k < w && x0 + k < COLS; k++)
            addch(k == 0 || k == w - 1 ? (edge ? '+' : '|') : edge ? '-' : ' ');
    }
    for (int i = 0; i < n; i++)
        mvprintw(y0 + 1 + i, x0 + 2, "%.*s", COLS - x0 - 2 > 0 ? COLS - x0 - 2 : 0, lines[i]);
}

static void draw(view *v)
{
    erase();
    unsigned alive = 0;
    for (unsigned i = 0; i < v->list.n; i++)
        alive += v->list.procs[i].alive != 0;
    mvprintw(0, 0, "cachealloc-top  %u process%s  sort: %s%s  (h: help, q: quit)", alive,
             alive == 1 ? "" : "es", top_col_title[v->sort], v->paused ? "  [paused]" : "");
    int y = draw_bars(v, 2);
    y++;
    attron(A_REVERSE);
    move(y, 0);
    int x = 0;
    for (int c = 0; c < COL_COUNT; c++) {
        if (c == COL_COMMAND)
            printw("%s", top_col_title[c]);
        else {
            mvprintw(y, x, c <= COL_USER || c == COL_API ? "%-*s " : "%*s ", top_col_width[c],
                     top_col_title[c]);
            x += top_col_width[c] + 1;
            move(y, x);
        }
    }
    chgat(-1, A_REVERSE, 0, NULL);
    attroff(A_REVERSE);
    y++;
    int room = LINES - y - 1;
    unsigned sel = selected_index(v);
    if (room > 0) {
        if (sel < v->top)
            v->top = sel;
        if (sel >= v->top + (unsigned)room)
            v->top = sel - (unsigned)room + 1;
        if (v->top >= v->nrows)
            v->top = 0;
    }
    for (unsigned i = v->top; i < v->nrows && y < LINES - 1; i++, y++)
        draw_row(y, &v->rows[i], i == sel);
    if (v->nrows == 0)
        mvprintw(y, 0, "(no process is publishing cachealloc statistics)");
    mvprintw(LINES - 1, 0, "%.*s", COLS, v->status);
    if (v->help)
        draw_help();
    refresh();
}

static void start_reclaim(view *v)
{
    if (v->nrows == 0)
        return;
    const top_row *r = &v->rows[selected_index(v)];
    char why[160];
    top_reclaim_close(&v->rec);
    if (top_reclaim_send(v->dir, r->proc->pid, -1, &v->rec, why, sizeof why) != 0) {
        snprintf(v->status, sizeof v->status, "reclaim failed: %s", why);
        return;
    }
    v->rec_deadline = now_s() + RECLAIM_WAIT_S;
    snprintf(v->status, sizeof v->status, "reclaim: asked pid %d...", r->proc->pid);
}

static void poll_reclaim(view *v)
{
    uint64_t bytes;
    if (!v->rec.map)
        return;
    int rc = top_reclaim_poll(&v->rec, &bytes);
    if (rc == 1) {
        char h[32];
        snprintf(v->status, sizeof v->status, "reclaim: pid %d released %s (%llu bytes)",
                 v->rec.pid, top_human_size(bytes, h, sizeof h), (unsigned long long)bytes);
        top_reclaim_close(&v->rec);
        refresh_data(v);
    } else if (rc < 0 || now_s() > v->rec_deadline) {
        snprintf(v->status, sizeof v->status, "reclaim: no answer from pid %d", v->rec.pid);
        top_reclaim_close(&v->rec);
    }
}

static int handle_key(view *v, int ch)
{
    unsigned sel = selected_index(v);
    int page = LINES > 10 ? LINES - 10 : 1;
    if (v->help && ch != ERR && ch != KEY_RESIZE) {
        v->help = 0;
        return 1;
    }
    switch (ch) {
    case 'q': case 'Q': return 0;
    case KEY_UP: case 'k': if (sel > 0) select_index(v, sel - 1); break;
    case KEY_DOWN: case 'j': select_index(v, sel + 1); break;
    case KEY_PPAGE: select_index(v, sel > (unsigned)page ? sel - (unsigned)page : 0); break;
    case KEY_NPAGE: select_index(v, sel + (unsigned)page); break;
    case KEY_HOME: select_index(v, 0); break;
    case KEY_END: select_index(v, v->nrows ? v->nrows - 1 : 0); break;
    case 's': case '>': v->sort = (top_col)((v->sort + 1) % COL_COUNT); resort(v); break;
    case '<': v->sort = (top_col)((v->sort + COL_COUNT - 1) % COL_COUNT); resort(v); break;
    case 'r': case 'R': start_reclaim(v); break;
    case 'p': case 'P': case ' ': v->paused = !v->paused; break;
    case 'h': case 'H': case '?': v->help = 1; break;
    default: break;
    }
    return 1;
}

int top_live(const char *dir, int pid_filter, double delay_s)
{
    view v;
    memset(&v, 0, sizeof v);
    v.dir = dir;
    v.pid_filter = pid_filter;
    v.delay = delay_s;
    v.sort = COL_RESERVED;
    setlocale(LC_ALL, "");
    if (!newterm(NULL, stdout, stdin)) {
        fprintf(stderr, "cachealloc-top: cannot drive this terminal (try --once)\n");
        return 1;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(100);
    refresh_data(&v);
    double next = now_s() + v.delay;
    int running = 1;
    while (running) {
        draw(&v);
        int ch = getch();
        if (ch != ERR)
            running = handle_key(&v, ch);
        poll_reclaim(&v);
        if (!v.paused && now_s() >= next) {
            refresh_data(&v);
            next = now_s() + v.delay;
        }
    }
    endwin();
    top_reclaim_close(&v.rec);
    free(v.rows);
    top_list_clear(&v.list);
    return 0;
}
