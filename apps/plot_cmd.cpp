// `openrnn plot METRICS.jsonl -o out.svg`: loss and accuracy curves from a --metrics file, as a standalone SVG.
// One panel for the series whose name contains "loss", one for those containing "acc" (when present); x is "step".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "io_error.h"
#include "file_util.h"
#include "json.h"

namespace openrnn::app {
namespace {

struct Series {
  std::vector<double> x, y;
};

// Tick values at 1, 2 or 5 times a power of ten covering [lo, hi] with about `target` ticks.
std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

// One panel at vertical offset y0: frame, grid, ticks, labels, polylines, legend.
// Loss falls and accuracy rises, so the legend goes top right for loss and bottom right for accuracy.
void panel(std::ostringstream& svg, const std::map<std::string, Series>& series, const std::string& title,
           const std::string& xlabel, double y0, double W, double Hp, bool legend_bottom) {
  const double ml = 70, mr = 20, mt = 30, mb = 45;
  const double pw = W - ml - mr, ph = Hp - mt - mb;
  double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
  for (const auto& kv : series)
    for (size_t i = 0; i < kv.second.x.size(); ++i) {
      xmin = std::min(xmin, kv.second.x[i]);
      xmax = std::max(xmax, kv.second.x[i]);
      ymin = std::min(ymin, kv.second.y[i]);
      ymax = std::max(ymax, kv.second.y[i]);
    }
  if (!(xmax > xmin)) { xmin -= 0.5; xmax += 0.5; }
  if (!(ymax > ymin)) { ymin -= 0.5; ymax += 0.5; }
  const double pad = (ymax - ymin) * 0.05, xpad = (xmax - xmin) * 0.02;
  ymin -= pad;
  ymax += pad;
  xmin -= xpad;
  xmax += xpad;
  const std::vector<double> xt = nice_ticks(xmin, xmax, 6), yt = nice_ticks(ymin, ymax, 5);
  auto X = [&](double v) { return ml + (v - xmin) / (xmax - xmin) * pw; };
  auto Y = [&](double v) { return y0 + mt + ph - (v - ymin) / (ymax - ymin) * ph; };

  svg << "<text x=\"" << ml + pw / 2 << "\" y=\"" << y0 + 20 << "\" text-anchor=\"middle\" font-size=\"15\" "
      << "font-weight=\"bold\">" << esc(title) << "</text>\n";
  for (double v : yt) {
    if (v < ymin || v > ymax) continue;
    svg << "<line x1=\"" << ml << "\" x2=\"" << ml + pw << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
        << "\" stroke=\"#e0e0e0\"/>\n";
    svg << "<line x1=\"" << ml - 5 << "\" x2=\"" << ml << "\" y1=\"" << Y(v) << "\" y2=\"" << Y(v)
        << "\" stroke=\"black\"/>\n";
    svg << "<text x=\"" << ml - 8 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\" font-size=\"12\">" << fmt(v)
        << "</text>\n";
  }
  for (double v : xt) {
    if (v < xmin || v > xmax) continue;
    svg << "<line x1=\"" << X(v) << "\" x2=\"" << X(v) << "\" y1=\"" << y0 + mt << "\" y2=\"" << y0 + mt + ph
        << "\" stroke=\"#f0f0f0\"/>\n";
    svg << "<line x1=\"" << X(v) << "\" x2=\"" << X(v) << "\" y1=\"" << y0 + mt + ph << "\" y2=\"" << y0 + mt + ph + 5
        << "\" stroke=\"black\"/>\n";
    svg << "<text x=\"" << X(v) << "\" y=\"" << y0 + mt + ph + 19 << "\" text-anchor=\"middle\" font-size=\"12\">"
        << fmt(v) << "</text>\n";
  }
  svg << "<rect x=\"" << ml << "\" y=\"" << y0 + mt << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  svg << "<text x=\"" << ml + pw / 2 << "\" y=\"" << y0 + Hp - 8 << "\" text-anchor=\"middle\" font-size=\"13\">"
      << esc(xlabel) << "</text>\n";
  int ci = 0;
  for (const auto& kv : series) {
    const char* color = kColors[ci++ % 6];
    svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < kv.second.x.size(); ++i) svg << X(kv.second.x[i]) << "," << Y(kv.second.y[i]) << " ";
    svg << "\"/>\n";
    if (kv.second.x.size() < 40)
      for (size_t i = 0; i < kv.second.x.size(); ++i)
        svg << "<circle cx=\"" << X(kv.second.x[i]) << "\" cy=\"" << Y(kv.second.y[i]) << "\" r=\"3\" fill=\"" << color
            << "\"/>\n";
  }
  // Legend last, so it is drawn over the curves.
  const double legend_h = 18.0 * series.size() + 8;
  const double lx = ml + pw - 140;
  const double ltop = legend_bottom ? y0 + mt + ph - legend_h - 8 : y0 + mt + 8;
  svg << "<rect x=\"" << lx - 8 << "\" y=\"" << ltop << "\" width=\"140\" height=\"" << legend_h
      << "\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n";
  double ly = ltop + 17;
  ci = 0;
  for (const auto& kv : series) {
    const char* color = kColors[ci++ % 6];
    svg << "<line x1=\"" << lx << "\" x2=\"" << lx + 24 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
        << "\" stroke=\"" << color << "\" stroke-width=\"3\"/>\n";
    svg << "<text x=\"" << lx + 30 << "\" y=\"" << ly << "\" font-size=\"12\">" << esc(kv.first) << "</text>\n";
    ly += 18;
  }
}

}  // namespace

int cmd_plot(const std::vector<std::string>& argv) {
  const Args args(argv, {"o", "output", "title"}, {"help"});
  if (args.has("help") || args.positional().size() != 1) {
    std::fputs("usage: openrnn plot METRICS.jsonl -o OUT.svg [--title TEXT]\n", args.has("help") ? stdout : stderr);
    if (args.has("help")) return 0;
    throw UsageError("plot needs exactly one METRICS.jsonl file");
  }
  const std::string in = args.positional()[0];
  const std::string out = args.str("o", args.str("output", ""));
  if (out.empty()) throw UsageError("plot needs -o OUT.svg");
  std::ifstream f(in);
  if (!f) throw std::runtime_error("cannot open " + in);
  std::map<std::string, Series> loss, acc;
  std::string line;
  long lineno = 0;
  bool any_step = false;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    io::Json j;
    try {
      j = io::Json::parse(line);
      if (!j.is_object()) throw io::FormatError("not a JSON object");
    } catch (const io::FormatError& e) {
      throw io::FormatError(in + ":" + std::to_string(lineno) + ": " + e.what());
    }
    double x = static_cast<double>(lineno);
    if (j.has("step") && j.at("step").is_number()) {
      x = j.at("step").as_double();
      any_step = true;
    }
    for (const auto& kv : j.members()) {
      if (!kv.second.is_number()) continue;
      const double v = kv.second.as_double();
      if (!std::isfinite(v)) continue;
      if (kv.first.find("loss") != std::string::npos) {
        loss[kv.first].x.push_back(x);
        loss[kv.first].y.push_back(v);
      } else if (kv.first.find("acc") != std::string::npos) {
        acc[kv.first].x.push_back(x);
        acc[kv.first].y.push_back(v);
      }
    }
  }
  if (loss.empty() && acc.empty()) throw std::runtime_error(in + ": no loss or accuracy values to plot");
  const double W = 820, Hp = 340;
  const int panels = (loss.empty() ? 0 : 1) + (acc.empty() ? 0 : 1);
  const std::string title = args.str("title", in);
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
      << "\" height=\"" << Hp * panels << "\" viewBox=\"0 0 " << W << " " << Hp * panels
      << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  double y0 = 0;
  const std::string xlabel = any_step ? "step" : "record";
  if (!loss.empty()) {
    panel(svg, loss, title + ": loss (nats)", xlabel, y0, W, Hp, false);
    y0 += Hp;
  }
  if (!acc.empty()) panel(svg, acc, title + ": accuracy", xlabel, y0, W, Hp, true);
  svg << "</svg>\n";
  const std::string s = svg.str();
  io::write_file_atomic(out, s.data(), s.size());
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace openrnn::app
