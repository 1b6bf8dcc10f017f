/// The one stylesheet, served from `/assets/style.css`: the pages carry no
/// inline style, so the Content-Security-Policy allows none.
enum Stylesheet {
    static let css = """
        body { font-family: system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
        header { background: #24292f; color: #fff; padding: .5rem 1rem; display: flex; gap: 1rem; align-items: center; }
        header a, header button { color: #fff; }
        header form { margin-left: auto; }
        main { padding: 1rem; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { border-bottom: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
        td.amount { text-align: right; font-variant-numeric: tabular-nums; }
        .filters label { margin-right: .5rem; }
        .notice { background: #fff8c5; border: 1px solid #d4a72c; padding: .5rem; margin: .5rem 0; }
        .error { background: #ffebe9; border: 1px solid #cf222e; padding: .5rem; margin: .5rem 0; }
        .badge { font-size: .8em; padding: 0 .3rem; border-radius: .3rem; background: #ddf4ff; }
        .badge.conflict { background: #ffebe9; }
        .receipt { max-width: 40rem; max-height: 40rem; border: 1px solid #ccc; display: block; }
        .token { font-family: monospace; font-size: 1.1em; background: #fff; padding: .5rem; border: 1px solid #999; }
        form.inline { display: inline; }
        """
}
