"""The independent ``no_raw_pii`` scanner at production scale: a Portuguese street word
that ends its sentence, followed by a numbered list ("o texto desta placa de rua?\\n1. ..."),
is no street address. Flagged, it would stop the month at the blocking check (two of the
500,000 conversations of a simulated month, and one of a 50,000-conversation month, hold
such text). A street word that ends its sentence is not followed by its number."""

from arena_assets.clean.pii_check import find_raw_pii


def test_a_street_word_ending_its_sentence_is_not_an_address():
    for text in (
        "Tenho uma pequena padaria e preciso disso para os meus clientes. Você pode me "
        "ajudar com o texto desta placa de rua?\n1. Aqui está uma ideia",
        "Qual é a melhor maneira de lidar com o texto desta placa de rua?\n1. Primeiro, olhamos",
        "Tenho uma dúvida sobre o texto desta placa de rua.\n1. Lembre-se de conferir",
    ):
        assert find_raw_pii(text) == []


def test_street_addresses_are_still_found():
    assert [k for k, _ in find_raw_pii("Moro na Rua Augusta 1500, em São Paulo")] == [
        "street_address"
    ]
    assert [k for k, _ in find_raw_pii("Ship it to 12 Elm Street. Thanks")] == ["street_address"]
    assert [k for k, _ in find_raw_pii("Calle Mayor 5, Madrid")] == ["street_address"]
