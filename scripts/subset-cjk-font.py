# Writes src/reports/fonts/noto-sans-sc-gb2312.ttf, the font PDF reports embed for Chinese text:
# Noto Sans SC Regular (SIL Open Font License 1.1, which allows subsetting and redistribution)
# cut down to ASCII, Latin-1, general and CJK punctuation, full-width forms and the 6 763 hanzi
# of GB 2312, so the repository carries ~2 MB instead of the whole 10 MB font. pdfkit embeds
# only the glyphs a report uses, so a report's size does not depend on this file's.
#
# Run with fontTools (Debian: python3-fonttools) on Noto Sans SC's TrueType file, e.g. the one
# in the npm package @expo-google-fonts/noto-sans-sc (400Regular/NotoSansSC_400Regular.ttf):
#   python3 scripts/subset-cjk-font.py path/to/NotoSansSC_400Regular.ttf
import sys

from fontTools import subset


def gb2312_hanzi():
    # GB 2312 rows 16-87 hold the hanzi (level 1: 16-55, level 2: 56-87), bytes 0xA1-0xFE each.
    for hi in range(0xB0, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                yield bytes([hi, lo]).decode("gb2312")
            except UnicodeDecodeError:
                pass


def main(src):
    codepoints = set(range(0x20, 0x7F)) | set(range(0xA0, 0x100))
    codepoints |= set(range(0x2000, 0x2070)) | set(range(0x3000, 0x3040)) | set(range(0xFF00, 0xFFF0))
    codepoints |= {ord(c) for c in gb2312_hanzi()}
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.name_legacy = True
    options.notdef_outline = True
    options.hinting = False
    font = subset.load_font(src, options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(font)
    subset.save_font(font, "src/reports/fonts/noto-sans-sc-gb2312.ttf", options)


if __name__ == "__main__":
    main(sys.argv[1])
