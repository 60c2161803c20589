"""The app's components where Gradio's own fall short: a slider, a number field and a text box that pass API
values on for the handlers' messages, and a plot a screen reader names by its figure's title (rendered once per
figure)."""
from __future__ import annotations

import threading
import weakref

import gradio as gr
from gradio.components.plot import PlotData
from matplotlib.figure import Figure


class Slider(gr.Slider):
    """gr.Slider that passes out-of-range API values on, so the handler's message names the field. Made with
    `buttons=[]`: no reset button (↺), which sets the value without the `.input` event that reruns the tab, so the
    results would no longer match the slider. Gradio reads a component's settings by its __init__'s parameter
    names, so this class keeps gr.Slider's __init__."""

    is_template = True  # rendered by the frontend's slider

    def preprocess(self, payload):
        return payload

    def api_info(self) -> dict:
        """Gradio's, as an integer where every value the slider takes is whole (top-k, k, epochs: view_api listed
        them as float, and 2.5 was then refused)."""
        info = super().api_info()
        if all(float(v).is_integer() for v in (self.minimum, self.maximum, self.step)):
            info = {**info, "type": "integer"}
        return info


class Number(gr.Number):
    """gr.Number that passes API values on as sent ("seed", NaN, 1.5), so the handler's message names the field
    instead of Gradio's generic error (or silent rounding)."""

    is_template = True  # rendered by the frontend's number field

    def preprocess(self, payload):
        return payload


class Textbox(gr.Textbox):
    """gr.Textbox that passes API values on as sent, so that a list (candidate words sent as ["France",
    "Germany"]) or a number gets the handler's "must be a string" message instead of being run as its Python
    repr ("['France', 'Germany']": gr.Textbox makes a string of anything). The page's box sends a string, or
    None, which the handlers read as an empty text, as they did."""

    is_template = True  # rendered by the frontend's text box

    def preprocess(self, payload):
        return payload


class NamedPlotData(PlotData):
    chart: str  # the frontend's image alt text reads "{chart} plot visualising provided data"


class Plot(gr.Plot):
    """gr.Plot whose image a screen reader names by the figure's title (Gradio's own alt text for a matplotlib
    figure reads "undefined plot visualising provided data"); a figure sent again (the same object, e.g. the
    cached position figure a /positions call gets) is not rendered again."""

    is_template = True  # rendered by the frontend's plot
    rendered: "weakref.WeakKeyDictionary[Figure, NamedPlotData]" = weakref.WeakKeyDictionary()
    # a lock per figure: Gradio postprocesses in worker threads, and one figure drawn by two threads at once (two
    # requests sending the cached position figure) comes out garbled or blank, and `rendered` would keep that
    rendering: "weakref.WeakKeyDictionary[Figure, threading.Lock]" = weakref.WeakKeyDictionary()
    lock = threading.Lock()  # guards the two dictionaries

    def postprocess(self, value):
        if not isinstance(value, Figure):
            return self._named(value)
        with Plot.lock:
            figure_lock = Plot.rendering.setdefault(value, threading.Lock())
        with figure_lock:
            with Plot.lock:
                data = Plot.rendered.get(value)
            if data is None:
                data = self._named(value)
                if isinstance(data, NamedPlotData):
                    with Plot.lock:
                        Plot.rendered[value] = data
            return data

    def _named(self, value):
        data = super().postprocess(value)
        if data is None or data.type != "matplotlib" or not isinstance(value, Figure):
            return data
        # the figure's own title first (a grid of heads titles each panel "head 1", the figure "Layer 1: ...")
        titles = [value.get_suptitle(), *(ax.get_title() for ax in value.axes)]
        title = next((t for t in titles if t), "") or self.label or "a figure"
        return NamedPlotData(type=data.type, plot=data.plot, chart=f"“{title}”:")
