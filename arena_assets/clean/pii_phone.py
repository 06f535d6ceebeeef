"""Is a digit run a phone number? The judgement, given the run and the words around it.

Validation is Google's `phonenumbers` (numbering plans of every country); what this
module adds is the evidence that a run of digits is dialled at all, which no numbering
plan can give: a "+" or a trunk "00", a national shape (NANP 3-3-4, CN mobile, trunk 0),
or a phone word next to it.

A 7-digit local number ("775-3905", dialled without its area code) has no shape of its
own: the same 3-4 digits are a subtraction, an order or ticket number, a range, a
Japanese postcode. It is taken only when all of these hold:

- it is written 3-4 with one separator, and its first three digits are a NANP exchange
  code (2-9, then anything but "11": 411 and 911 are service codes, 1xx and 0xx are no
  exchange, so "150-0002" or "123-4567" stay);
- no operator touches it ("= 775-3905", "775-3905 *") and no id word labels it ("order",
  "Bestellnummer", "numéro de commande", "订单号", "номер заказа": those are order,
  ticket and customer numbers, the commonest 3-4 codes in prompts);
- a phone word stands in the 40 characters before it ("call", "my number is",
  "звонили с") or in the rest of its sentence and the next one, at most 60 characters
  ("... a scam number?", "...? They called twice", "... からの電話"). After the number, "number" alone is not such a word, nor the Spanish
  "número": "Is 775-3905 a negative number?" is arithmetic.

What stays ambiguous: a bare "775-3905" with no word around it ("What is 775-3905?",
"Save 775-3905") is kept, whatever it is; a phone word that is about something else in
the same sentence ("Call me crazy, but is 775-3905 negative?") makes it a phone.
"""

from __future__ import annotations

import re

import phonenumbers

# an operator right before or right after the number: arithmetic, not a phone
MATH_BEFORE = re.compile(r"[=*^×÷<>]\s*$")
MATH_AFTER = re.compile(r"^\s*(?:[=*^×÷<>]|[+\-/]\s+\d)")
PHONE_WORDS = re.compile(
    r"(?i)(?:tel|phone|call|mobile|cell|whatsapp|fax|handy|ruf|anruf|appel|portable|móvil|movil|"
    r"my number(?!s)|number is|reach me|text me|ring me|contact me|nummer|numéro|número|tlf|sms|"
    r"landline|voicemail|robocall|scam|spam|dial|['’]s number|"
    r"llam|llám|celular|telefone|cellulare|chiam|телефон|звон|номер|电话|手机|電話|携帯|नंबर|फ़ोन|फोन|कॉल)"
)
# the verb right before the number: "Text 893-2240", "dial 437 1185", "text back 674-1029"
_VERB_BEFORE = re.compile(r"(?i)\b(?:text|txt|ring|dial|wähle|compose|marca)(?:\s+back)?\W{0,3}$")
# in the sentence after the number: what is said of a phone, in the languages of the corpus
_WORDS_AFTER = re.compile(
    r"(?i)(?:call|rang\b|rings?\b|ringing|phon|text(?:s|ed|ing)\b|sms|voicemail|scam|spam|"
    r"robocall|fraud|caller|whatsapp|ruf|anruf|betrug|nummer|appel|numéro|arnaque|"
    r"llam|estafa|fraude|teléfono|telefono|звон|номер|мошен|спам|"
    r"电话|号码|來電|来电|骚扰|诈骗|電話|着信|番号|詐欺|迷惑)"
)
# the rest of the number's sentence and the next one ("Who owns 629-4417? They keep texting")
_SENTENCES = re.compile(r"[^.!?。！？\n]*[.!?。！？]*[^.!?。！？\n]*")
# an id word labelling the number: an order, ticket, customer, booking or contract number
# (Latin-script words from a word start: "part" is no id word inside "apartment")
_ID_WORD = (
    r"\b(?:order|invoice|ticket|claim|reference|account|customer|client|booking|"
    r"reservation|confirmation|tracking|bestell|kunden|auftrags|rechnungs|vertrags|buchungs|"
    r"sendungs|commande|facture|référence|dossier|pedido|factura|cliente|reserva|referencia|"
    r"заказ|договор|сч[её]т)|订单|单号|编号|注文|予約|受付|伝票"
)
# also labels when right before the number ("part 775-3905"), too common to veto after it
_ID_WORD_NEAR = r"\b(?:case|ref|item|part|serial|policy|member|sku)"
_ID_LABEL = re.compile(
    rf"(?i)(?:{_ID_WORD}|{_ID_WORD_NEAR})\w*(?:\W|number|no|nr|num|nummer|numéro|numero|"
    r"número|id|is|es|est|ist|de|del|du|de la|号|番号|номер)*$"
)
_ID_AFTER = re.compile(rf"(?i){_ID_WORD}")
_LOCAL = re.compile(r"[2-9]\d{2}[ .\-]\d{4}")
# without a phone word these shapes are quantities and codes, not numbers to dial: digits
# grouped in thousands ("299 792 458 m/s", "125 000 000 рублей"), a US ZIP+4 code
_THOUSANDS = re.compile(r"[1-9]\d{0,2}(?:[ \u00a0]\d{3}){2,}")
_ZIP4 = re.compile(r"\d{5}-\d{4}")
DOTTED_PHONE = re.compile(
    r"\(?\d{3}\)?\.\d{3}\.\d{4}|0\d(?:\.\d{2}){4}|\+?[\d ]+(?:\.\d{2}){4}|\d{3}\.\d{4}"
)


def _regions(digits: str) -> tuple[str, ...]:
    """Regions whose national notation a digit string could be written in."""
    if digits.startswith("0"):
        return ("DE", "GB", "FR", "JP", "IN", "IT", "NL", "AT", "CH", "BR", "KR", "AU", "TR")
    if digits.startswith("8") and len(digits) == 11:
        return ("RU",)
    return ("CN", "US", "IN", "ES", "IT", "BR", "MX", "PL", "PT")


def _labelled_as_id(before: str) -> bool:
    return bool(_ID_LABEL.search(before[-30:]))


def local_number(text: str, before: str, after: str) -> bool:
    """A 7-digit local number dialled without its area code ("is 775-3905 a scam?"); see
    the module doc for the evidence it needs."""
    if not _LOCAL.fullmatch(text) or text[1:3] == "11" or _labelled_as_id(before):
        return False
    if not (PHONE_WORDS.search(before) or _VERB_BEFORE.search(before)):
        sentence = _SENTENCES.match(after).group()[:60]
        said = _WORDS_AFTER.search(sentence)
        if not said or _ID_AFTER.search(sentence, 0, said.start()):
            return False
    number = phonenumbers.parse(re.sub(r"\D", "", text), "US")
    return (
        phonenumbers.is_possible_number_with_reason(number)
        == phonenumbers.ValidationResult.IS_POSSIBLE_LOCAL_ONLY
    )


def is_phone(raw: str, digits: str, before: str, after: str) -> bool:
    """Whether ``raw`` (NFKC-normalised, ``digits`` its digits) is a phone number, given
    the 40 characters ``before`` it and the text ``after`` it."""
    if not 7 <= len(digits) <= 15 or MATH_BEFORE.search(before) or MATH_AFTER.search(after):
        return False
    text = raw.strip()
    if "." in text and not DOTTED_PHONE.fullmatch(text):
        return False  # dots join versions, IPs and decimals; phones only in 3.3.4 / 2.2.2.2.2
    groups = re.findall(r"\d+", text)
    if sum(len(g) == 1 for g in groups) > 2:
        return False  # "6 8 4 2 4 6 3 1": a digit sequence (real arena prompt), not a phone
    if len(groups) == 2 and "-" in text and groups[0].endswith("00") and groups[1].endswith("00"):
        return False  # "20000-30000": a range
    separated = bool(re.search(r"[ .\-/()]", text.lstrip("+")))
    if text.startswith("+") or (digits.startswith("00") and not digits.startswith("000")):
        try:
            number = phonenumbers.parse(
                "+" + digits[2:] if not text.startswith("+") else text, None
            )
        except phonenumbers.NumberParseException:
            return False
        return phonenumbers.is_possible_number(number)
    keyword = bool(PHONE_WORDS.search(before)) and not _labelled_as_id(before)
    small = all(len(g) <= 2 for g in groups) and not text.startswith(("+", "("))
    if small and (any(len(g) == 1 for g in groups) or not (keyword or groups[0].startswith("0"))):
        return False  # "42 17 8 99 23": a list of small numbers (spaced pairs need a trunk 0)
    if len(digits) == 7 and local_number(text, before, after):
        return True
    if not keyword and (_THOUSANDS.fullmatch(text) or _ZIP4.fullmatch(text)):
        return False
    if len(digits) < 9 and not keyword:
        return False  # national numbers are 9+ digits nearly everywhere; shorter ones need a word
    if (
        not separated
        and not keyword
        and not (re.fullmatch(r"1[3-9]\d{9}", digits) or re.fullmatch(r"0\d{9,11}", digits))
    ):
        return False  # a bare digit run needs a phone word, or the shape of a CN mobile / trunk-0 number
    if re.fullmatch(r"\(?\d{3}\)?[ .\-]?\d{3}[ .\-]\d{4}", text) or re.fullmatch(
        r"1[ .\-]\d{3}[ .\-]\d{3}[ .\-]\d{4}", text
    ):
        number = phonenumbers.parse(digits[-10:], "US")  # NANP shape, area code not checked
        return phonenumbers.is_possible_number(number)
    for region in _regions(digits):
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(digits, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False
