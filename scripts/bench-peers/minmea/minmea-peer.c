/*
 * minmea-peer: the peer of scripts/bench's replay row (SPEC §9: geolocate >= 2x minmea).
 *
 *   minmea-peer FILE.nmea
 *
 * Does with kosma/minmea (minmea.c and minmea.h beside this file, unchanged) what
 * `geolocate-bench FILE.nmea` does with geolocate's parser (Sources/NMEA/NMEAReader.swift,
 * NMEASentence.swift, EpochAssembler.swift): reads the file in 1 MiB blocks, splits it into
 * lines and each line into `$` sentences, verifies every checksum (minmea_check, strict),
 * decodes the sentence types geolocate uses (GGA, RMC, GLL, GSA, GST, GSV with every
 * satellite's PRN, elevation, azimuth and SNR, VTG, ZDA) with the matching minmea_parse_*,
 * converts the fields a fix is made of to numbers, and assembles epochs: a sentence with a
 * new UTC time of day closes the epoch in progress, as geolocate's EpochAssembler does.
 * It prints one JSON line:
 *
 *   {"sentences": N, "epochs": M, "skipped": K, "unknown": U, "fixes": F, "bytes": B, "digest": D}
 *
 * sentences, epochs, skipped and unknown count what geolocate-bench's keys of the same names
 * count, and on a log made by nmea-gen.py (clean or corrupted) they agree. Where they can differ:
 * - minmea has no GNS parser (geolocate decodes GNS): a GNS is a sentence of type "unknown"
 *   here, and its time does not open or close an epoch. nmea-gen.py writes no GNS.
 * - a checksummed sentence whose address field is not five printable characters ("$GP,…")
 *   fails minmea_sentence_id and is skipped here; geolocate accepts one of six or more bytes
 *   and counts it unknown. A sentence without a checksum is skipped here (strict), while
 *   geolocate accepts those of a stream that never had a checksum (some timing receivers).
 * - a sentence minmea_parse_* rejects (a malformed field) counts as unknown here; geolocate
 *   reads such fields as empty and keeps the sentence.
 * - fixes is a simplified version of geolocate's rule (position valid, no GGA quality 0 or
 *   GSA mode 1, a date known), for a sanity check, not a figure; digest sums the decoded
 *   values at each epoch's close so that the compiler cannot drop their conversions.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "minmea.h"

#define BLOCK (1 << 20)
/* The longest line accepted, as NMEAReader.maximumLineLength (SPEC §2). */
#define MAX_LINE 1024

/* What the sentences of the epoch in progress said. */
struct epoch {
    int time;              /* UTC time of day in ms, -1 before the first timed sentence */
    bool has_date;
    int position_valid;    /* -1 no position sentence yet, 0 no fix, 1 valid */
    double latitude, longitude;
    bool gga_no_fix, gga_few_sats;
    int gsa_fix_type;      /* 0 none seen */
    int used;              /* satellites used, from GSA */
    double altitude, separation, hdop, vdop, pdop;
    double sigma_lat, sigma_lon, sigma_alt;
    double speed_knots, course;
    int in_view;           /* satellites in view from GSV, and their SNR */
    double snr_sum, elevation_sum, azimuth_sum;
};

static struct {
    long sentences, skipped, unknown, epochs, fixes;
    long long bytes;
    bool date_seen;        /* a date was seen in an earlier epoch, carried forward */
    double digest;
    struct epoch e;
} st;

static void reset_epoch(void)
{
    memset(&st.e, 0, sizeof st.e);
    st.e.time = -1;
    st.e.position_valid = -1;
}

static double value(const struct minmea_float *f)
{
    return f->scale == 0 ? 0.0 : (double) minmea_tofloat(f);
}

static void close_epoch(void)
{
    struct epoch *e = &st.e;
    if (e->time < 0)
        return;
    st.epochs++;
    if (e->has_date)
        st.date_seen = true;
    bool fix = e->position_valid == 1 && !e->gga_no_fix && e->gsa_fix_type != 1
        && !(e->gga_few_sats && e->gsa_fix_type == 0) && st.date_seen;
    if (fix) {
        st.fixes++;
        double horizontal = (e->sigma_lat > 0 && e->sigma_lon > 0)
            ? sqrt(e->sigma_lat * e->sigma_lat + e->sigma_lon * e->sigma_lon) : e->hdop * 5.0;
        st.digest += e->latitude + e->longitude + (e->altitude + e->separation) + horizontal
            + (e->sigma_alt > 0 ? e->sigma_alt : e->vdop * 5.0) + e->speed_knots * (1852.0 / 3600.0)
            + e->course + e->pdop + e->used;
    }
    if (e->in_view > 0)
        st.digest += e->snr_sum / e->in_view + (e->elevation_sum + e->azimuth_sum) * 1e-6;
    reset_epoch();
}

/* A timed sentence: returns false when its time is empty (geolocate then ignores the
 * sentence, which may belong to the next epoch); closes the epoch when the time changed. */
static bool at_time(const struct minmea_time *t)
{
    if (t->hours < 0)
        return false;
    int ms = ((t->hours * 60 + t->minutes) * 60 + t->seconds) * 1000 + t->microseconds / 1000;
    if (st.e.time >= 0 && st.e.time != ms)
        close_epoch();
    st.e.time = ms;
    return true;
}

static void set_position(const struct minmea_float *lat, const struct minmea_float *lon, bool valid)
{
    if (!valid) {
        if (st.e.position_valid < 0)
            st.e.position_valid = 0;
        return;
    }
    if (lat->scale == 0 || lon->scale == 0)
        return;
    double latitude = minmea_tocoord(lat), longitude = minmea_tocoord(lon);
    if (fabs(latitude) > 90 || fabs(longitude) > 180)
        return;
    st.e.latitude = latitude;
    st.e.longitude = longitude;
    st.e.position_valid = 1;
}

/* One `$…` sentence, NUL-terminated. */
static void sentence(const char *s)
{
    enum minmea_sentence_id id = minmea_sentence_id(s, true);  /* minmea_check + address */
    if (id == MINMEA_INVALID) {
        st.skipped++;
        return;
    }
    st.sentences++;
    struct epoch *e = &st.e;
    switch (id) {
    case MINMEA_SENTENCE_GGA: {
        struct minmea_sentence_gga f;
        if (!minmea_parse_gga(&f, s))
            break;
        if (!at_time(&f.time))
            return;
        if (f.fix_quality == 0) {
            e->gga_no_fix = true;
            e->position_valid = 0;
            return;
        }
        e->gga_no_fix = false;
        e->gga_few_sats = f.satellites_tracked < 3;
        set_position(&f.latitude, &f.longitude, true);
        if (f.hdop.scale)
            e->hdop = value(&f.hdop);
        e->altitude = value(&f.altitude);
        if (f.height.scale)
            e->separation = value(&f.height);
        return;
    }
    case MINMEA_SENTENCE_RMC: {
        struct minmea_sentence_rmc f;
        if (!minmea_parse_rmc(&f, s))
            break;
        if (!at_time(&f.time))
            return;
        if (f.date.day > 0)
            e->has_date = true;
        if (!f.valid)
            e->position_valid = 0;
        set_position(&f.latitude, &f.longitude, f.valid);
        if (f.valid) {
            if (f.speed.scale)
                e->speed_knots = value(&f.speed);
            if (f.course.scale)
                e->course = value(&f.course);
        }
        return;
    }
    case MINMEA_SENTENCE_GLL: {
        struct minmea_sentence_gll f;
        if (!minmea_parse_gll(&f, s))
            break;
        if (!at_time(&f.time))
            return;
        set_position(&f.latitude, &f.longitude, f.status == 'A' && f.mode != 'N');
        return;
    }
    case MINMEA_SENTENCE_GSA: {
        struct minmea_sentence_gsa f;
        if (!minmea_parse_gsa(&f, s))
            break;
        if (f.fix_type < 1 || f.fix_type > 3)
            return;
        e->gsa_fix_type = f.fix_type;
        e->used = 0;
        for (int i = 0; i < 12; i++)
            if (f.sats[i] > 0)
                e->used++;
        e->pdop = value(&f.pdop);
        if (f.hdop.scale)
            e->hdop = value(&f.hdop);
        if (f.vdop.scale)
            e->vdop = value(&f.vdop);
        return;
    }
    case MINMEA_SENTENCE_GST: {
        struct minmea_sentence_gst f;
        if (!minmea_parse_gst(&f, s))
            break;
        if (!at_time(&f.time))
            return;
        e->sigma_lat = value(&f.latitude_error_deviation);
        e->sigma_lon = value(&f.longitude_error_deviation);
        e->sigma_alt = value(&f.altitude_error_deviation);
        return;
    }
    case MINMEA_SENTENCE_GSV: {
        struct minmea_sentence_gsv f;
        if (!minmea_parse_gsv(&f, s))
            break;
        for (int i = 0; i < 4; i++) {
            if (f.sats[i].nr <= 0)
                continue;
            e->in_view++;
            e->elevation_sum += f.sats[i].elevation;
            e->azimuth_sum += f.sats[i].azimuth;
            e->snr_sum += value(&f.sats[i].snr);
        }
        return;
    }
    case MINMEA_SENTENCE_VTG: {
        struct minmea_sentence_vtg f;
        if (!minmea_parse_vtg(&f, s))
            break;
        if (f.faa_mode == MINMEA_FAA_MODE_NOT_VALID)
            return;
        if (f.speed_knots.scale)
            e->speed_knots = value(&f.speed_knots);
        if (f.true_track_degrees.scale)
            e->course = value(&f.true_track_degrees);
        return;
    }
    case MINMEA_SENTENCE_ZDA: {
        struct minmea_sentence_zda f;
        if (!minmea_parse_zda(&f, s))
            break;
        if (!at_time(&f.time))
            return;
        if (f.date.day > 0 && f.date.month > 0 && f.date.year > 0)
            e->has_date = true;
        return;
    }
    default:
        break;  /* GBS, and types minmea does not know (GNS, proprietary, …) */
    }
    st.unknown++;
}

/* One physical line of `n` bytes, with room for a NUL at line[n]. */
static void line(char *line, size_t n)
{
    while (n > 0 && line[n - 1] == '\r')
        n--;
    if (n == 0 || line[0] == '#')  /* blank, or a comment as in gpsd's logs */
        return;
    if (n > MAX_LINE) {
        st.skipped++;
        return;
    }
    line[n] = '\0';
    char *p = memchr(line, '$', n);
    if (p != line)
        st.skipped++;  /* junk before the first sentence, or no sentence at all */
    /* Every `$` starts a sentence, so "$GPGGA,12$GPRMC,…" keeps its second one. */
    while (p) {
        char *next = memchr(p + 1, '$', (size_t) (line + n - (p + 1)));
        if (next)
            *next = '\0';
        sentence(p);
        if (next)
            *next = '$';
        p = next;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: minmea-peer FILE.nmea\n");
        return 64;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "minmea-peer: %s: %s\n", argv[1], strerror(errno));
        return 66;
    }
    size_t capacity = BLOCK + MAX_LINE + 2;
    char *base = malloc(capacity + 1);  /* + 1: a NUL after a last line without a newline */
    if (!base)
        return 71;
    reset_epoch();
    size_t filled = 0, start = 0;
    bool discarding = false;  /* dropping the rest of a line longer than MAX_LINE */
    for (;;) {
        ssize_t got = read(fd, base + filled, capacity - filled);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "minmea-peer: %s: %s\n", argv[1], strerror(errno));
            return 74;
        }
        st.bytes += got;
        size_t scan = filled;
        filled += (size_t) got;
        char *newline;
        while (scan < filled && (newline = memchr(base + scan, '\n', filled - scan))) {
            size_t end = (size_t) (newline - base);
            if (discarding)
                discarding = false;
            else
                line(base + start, end - start);
            start = scan = end + 1;
        }
        if (got == 0) {
            if (filled > start && !discarding)
                line(base + start, filled - start);
            break;
        }
        if (filled - start > MAX_LINE + 2) {
            if (!discarding)
                st.skipped++;
            discarding = true;
            start = filled;
        }
        memmove(base, base + start, filled - start);
        filled -= start;
        start = 0;
    }
    close_epoch();
    close(fd);
    printf("{\"sentences\": %ld, \"epochs\": %ld, \"skipped\": %ld, \"unknown\": %ld, \"fixes\": %ld, "
           "\"bytes\": %lld, \"digest\": %.6f}\n",
           st.sentences, st.epochs, st.skipped, st.unknown, st.fixes, st.bytes, st.digest);
    return 0;
}
