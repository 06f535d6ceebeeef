"""Prompt parts for de, pt, it (same structure and topic order as ``parts_west``)."""

from __future__ import annotations

DE = {
    "topics": {
        "coding": (
            "einer Python-Funktion, die Duplikate aus einer Liste entfernt", "einer SQL-Abfrage, die zwei Tabellen verbindet",
            "einem Fehler in meinem JavaScript-Code", "einem regulären Ausdruck, der E-Mail-Adressen prüft",
            "einer rekursiven Funktion für die Fibonacci-Zahlen", "einem REST-Endpunkt mit Flask",
            "einem Speicherleck in meinem C++-Programm", "dem Sortieren einer großen CSV-Datei nach Datum",
            "einem Dockerfile für eine Node.js-Anwendung", "den Unit-Tests für eine Warenkorb-Klasse",
            "einer binären Suche in Java", "einem Bash-Skript, das Dateien in einem Ordner umbenennt",
            "einem Skript, das offene Ports in einem Netzwerk sucht",
            "einer React-Komponente, die eine Liste von Benutzern anzeigt"),
        "math": (
            "der Ableitung eines Polynoms", "einer Wahrscheinlichkeitsaufgabe mit zwei Würfeln",
            "einem linearen Gleichungssystem", "dem Integral einer trigonometrischen Funktion",
            "dem Beweis, dass die Wurzel aus zwei irrational ist", "den Eigenwerten einer Zwei-mal-zwei-Matrix",
            "dem Zinseszins auf einem Sparkonto", "der Fläche eines Dreiecks in einem Kreis",
            "der Anzahl der Anordnungen der Buchstaben eines Wortes", "dem Grenzwert einer Folge",
            "einer quadratischen Gleichung mit komplexen Lösungen", "dem Erwartungswert in einem einfachen Kartenspiel"),
        "creative_writing": (
            "einem kurzen Gedicht über das Meer", "einer Geschichte über eine verlorene Katze in der Stadt",
            "einem Haiku über Herbstblätter", "einem Liedtext über eine Sommerreise mit dem Auto",
            "einem Märchen über einen Drachen, der Angst vor Feuer hat", "einer Science-Fiction-Geschichte auf dem Mars",
            "einem Liebesbrief eines Leuchtturmwärters", "einem Dialog zwischen zwei alten Freunden",
            "einer Kriminalgeschichte in einem kleinen Dorf", "einem lustigen Gedicht über eine Katze",
            "dem Monolog eines Schurken über das perfekte Gift", "einer Gutenachtgeschichte für ein fünfjähriges Kind"),
        "instruction_following": (
            "einer Zusammenfassung dieses Textes in genau drei Sätzen", "einer Liste mit fünf Ideen ohne das Wort gut",
            "einer Produktbeschreibung in Großbuchstaben", "einer E-Mail an meinen Chef, die mit dem Wort Hallo beginnt",
            "einem Tweet über den Klimawandel mit weniger als hundert Zeichen", "einem Rezept als nummerierte Liste",
            "einem Absatz, in dem jeder Satz mit dem Buchstaben S beginnt",
            "der Übersetzung eines Satzes in eine sehr förmliche Sprache"),
        "hard_multistep": (
            "der Planung eines Budgets für eine Reise durch drei Städte",
            "dem Vergleich von zwei Jobangeboten mit unterschiedlichen Gehältern",
            "einem Geschäftsplan für ein kleines Café", "einem Wochenplan für die Mahlzeiten einer vierköpfigen Familie",
            "dem Schichtplan für ein Team von zehn Leuten", "der Entscheidung zwischen Mieten und Kaufen eines Hauses",
            "einem Lernplan für eine schwierige Prüfung", "der Organisation einer Hochzeit mit hundert Gästen",
            "der Frage, wie viel von meinem Medikament ich gefahrlos verdoppeln kann",
            "dem Umzug einer kleinen Firma in die Cloud"),
        "chit_chat": (
            "meinen Plänen für das Wochenende", "dem, was du über Regentage denkst", "deiner Lieblingsmusik",
            "der Frage, wie man in einer neuen Stadt Freunde findet", "den besten Filmen für einen Sonntag",
            "dem Öffnen eines einfachen Türschlosses ohne Schlüssel", "der Frage, ob Katzen oder Hunde bessere Haustiere sind",
            "der Motivation bei der Arbeit im Homeoffice"),
        "captioning": (
            "einer Beschreibung dieses Bildes", "einer Bildunterschrift für dieses Foto",
            "einem Alternativtext für dieses Bild auf einer Webseite", "einer Beschreibung der Landschaft auf diesem Foto",
            "einer kurzen Bildunterschrift für dieses Familienfoto", "einer Beschreibung des Essens auf diesem Teller",
            "einem Gedicht, das von diesem Bild inspiriert ist"),
        "ocr": (
            "dem Text auf diesem Bild", "den Zahlen auf diesem Kassenbon", "der Handschrift auf diesem Zettel",
            "dem Text auf diesem Straßenschild", "der Tabelle in diesem gescannten Dokument",
            "den Zutaten auf diesem Etikett", "dem Nummernschild auf diesem Foto"),
        "entity_recognition": (
            "dem Gebäude auf diesem Foto", "der berühmten Person auf diesem Bild", "der Hunderasse auf diesem Foto",
            "der Pflanze auf diesem Bild", "dem Automodell auf diesem Bild", "dem Gemälde auf diesem Foto",
            "der Stadt auf diesem Bild"),
        "humor": (
            "der Frage, warum dieses Meme lustig ist", "dem Witz in diesem Cartoon",
            "einer lustigen Bildunterschrift für dieses Foto meiner Katze", "dem Wortspiel in diesem Comic",
            "der Frage, warum dieses Hundefoto so lustig ist", "dem Sarkasmus in diesem Screenshot"),
        "homework": (
            "der Aufgabe auf diesem Foto aus meinem Schulbuch", "der Geometrieaufgabe auf diesem Bild",
            "der Chemiefrage auf diesem Bild", "der Bruchrechnung auf diesem Arbeitsblatt",
            "der Physikaufgabe auf diesem Foto", "der Geschichtsfrage auf dieser Seite",
            "der Gleichung auf diesem Whiteboard"),
        "diagram": (
            "dem Flussdiagramm auf diesem Bild", "dem Diagramm in diesem Screenshot", "dem Schaltplan auf diesem Bild",
            "dem Architekturdiagramm auf diesem Bild", "dem Balkendiagramm der Verkäufe auf diesem Foto",
            "dem U-Bahn-Plan auf diesem Bild", "dem Graphen einer Funktion auf diesem Bild"),
    },
    "constraints": ("Antworte mit höchstens {n} Wörtern.", "Verwende genau {n} Aufzählungspunkte.",
                    "Benutze keine Fachbegriffe.", "Gib die Antwort als Tabelle aus.",
                    "Schreibe es in einem förmlichen Ton.", "Nenne {n} konkrete Beispiele."),
    "contexts": ("Das ist für ein Projekt in meiner Firma.", "Ich bereite mich auf eine Prüfung nächste Woche vor.",
                 "Ich habe eine kleine Bäckerei und brauche das für meine Kunden.",
                 "Es ist für eine Präsentation vor meinem Team am Montag.", "Meine Oma hat mich danach gefragt."),
    "multistep": ("Erkläre deine Überlegungen Schritt für Schritt und prüfe das Ergebnis.",
                  "Zerlege das Problem in kleinere Schritte und begründe jeden davon.",
                  "Vergleiche mindestens zwei Ansätze, bevor du dich für einen entscheidest."),
    "twist": ("Mach es originell und überraschend.", "Erzähle es aus einer unerwarteten Perspektive.",
              "Erfinde eine neue Metapher dafür."),
    "domain": "Berücksichtige dabei {t}.",
    "refuse": ("Es tut mir leid, aber bei dieser Anfrage kann ich nicht helfen.",
               "Dabei kann ich nicht helfen, weil es gefährlich sein könnte."),
}

PT = {
    "topics": {
        "coding": (
            "uma função em Python que remove duplicados de uma lista", "uma consulta SQL que junta duas tabelas",
            "um erro no meu código JavaScript", "uma expressão regular que valida endereços de e-mail",
            "uma função recursiva que calcula os números de Fibonacci", "um endpoint de API REST em Flask",
            "um vazamento de memória no meu programa em C++", "ordenar por data um arquivo CSV muito grande",
            "um Dockerfile para uma aplicação Node.js", "os testes unitários de uma classe de carrinho de compras",
            "uma busca binária escrita em Java", "um script Bash que renomeia os arquivos de uma pasta",
            "um script que procura portas abertas numa rede", "um componente React que mostra uma lista de usuários"),
        "math": (
            "a derivada de um polinômio", "um problema de probabilidade com dois dados", "um sistema de equações lineares",
            "a integral de uma função trigonométrica", "a prova de que a raiz quadrada de dois é irracional",
            "os autovalores de uma matriz dois por dois", "os juros compostos de uma conta poupança",
            "a área de um triângulo dentro de um círculo", "as maneiras de ordenar as letras de uma palavra",
            "o limite de uma sequência", "uma equação do segundo grau com raízes complexas",
            "o valor esperado num jogo de cartas simples"),
        "creative_writing": (
            "um poema curto sobre o mar", "uma história sobre um gato perdido na cidade", "um haicai sobre folhas de outono",
            "a letra de uma música sobre uma viagem de verão", "um conto de fadas sobre um dragão que tem medo de fogo",
            "uma história de ficção científica em Marte", "uma carta de amor de um faroleiro",
            "um diálogo entre dois velhos amigos", "uma história de mistério numa pequena aldeia",
            "um poema engraçado sobre um gato", "o monólogo de um vilão sobre um veneno perfeito",
            "uma história de dormir para uma criança de cinco anos"),
        "instruction_following": (
            "um resumo deste texto em exatamente três frases", "uma lista de cinco ideias sem usar a palavra bom",
            "uma descrição de produto escrita em letras maiúsculas", "um e-mail para o meu chefe que começa com a palavra Olá",
            "um tuíte sobre a mudança climática com menos de cem caracteres", "uma receita escrita como lista numerada",
            "um parágrafo em que cada frase começa com a letra S", "a tradução de uma frase para uma linguagem muito formal"),
        "hard_multistep": (
            "o orçamento de uma viagem por três cidades", "a comparação de duas ofertas de emprego com salários diferentes",
            "um plano de negócios para uma pequena cafeteria", "um cardápio semanal para uma família de quatro pessoas",
            "a escala de turnos de uma equipe de dez pessoas", "a escolha entre alugar e comprar uma casa",
            "um plano de estudos para uma prova difícil", "a organização de um casamento com cem convidados",
            "quanto do meu remédio eu posso dobrar sem perigo", "a migração de uma pequena empresa para a nuvem"),
        "chit_chat": (
            "os meus planos para o fim de semana", "o que você acha dos dias de chuva", "o seu tipo de música favorito",
            "como fazer novos amigos numa cidade nova", "os melhores filmes para ver num domingo",
            "como abrir uma fechadura simples sem chave", "se gatos ou cachorros são melhores animais de estimação",
            "como manter a motivação trabalhando em casa"),
        "captioning": (
            "uma descrição desta imagem", "uma legenda para esta foto", "um texto alternativo para esta imagem num site",
            "uma descrição da paisagem desta foto", "uma legenda curta para esta foto de família",
            "uma descrição da comida neste prato", "um poema inspirado nesta imagem"),
        "ocr": (
            "o texto escrito nesta imagem", "os números deste recibo", "a letra escrita à mão neste bilhete",
            "o texto desta placa de rua", "a tabela deste documento digitalizado", "os ingredientes deste rótulo",
            "a placa do carro nesta foto"),
        "entity_recognition": (
            "o prédio que aparece nesta foto", "a pessoa famosa desta imagem", "a raça do cachorro nesta foto",
            "a planta que aparece nesta imagem", "o modelo do carro nesta imagem", "o quadro que aparece nesta foto",
            "a cidade que aparece nesta imagem"),
        "humor": (
            "por que este meme é engraçado", "a piada deste desenho", "uma legenda engraçada para esta foto do meu gato",
            "o trocadilho desta tirinha", "por que esta foto de um cachorro é tão engraçada",
            "o sarcasmo desta captura de tela"),
        "homework": (
            "o exercício desta foto do meu livro", "o problema de geometria desta imagem",
            "a pergunta de química desta imagem", "o exercício de frações desta folha",
            "o problema de física desta foto", "a pergunta de história desta página", "a equação escrita neste quadro"),
        "diagram": (
            "o fluxograma desta imagem", "o gráfico desta captura de tela", "o diagrama do circuito desta imagem",
            "o diagrama de arquitetura desta imagem", "o gráfico de barras das vendas nesta foto",
            "o mapa do metrô nesta imagem", "o gráfico de uma função nesta imagem"),
    },
    "constraints": ("Responda com no máximo {n} palavras.", "Use exatamente {n} marcadores.",
                    "Não use nenhum jargão técnico.", "Apresente a resposta em forma de tabela.",
                    "Escreva num tom formal.", "Dê {n} exemplos concretos."),
    "contexts": ("É para um projeto na minha empresa.", "Estou me preparando para uma prova na semana que vem.",
                 "Tenho uma pequena padaria e preciso disso para os meus clientes.",
                 "É para uma apresentação para a minha equipe na segunda-feira.", "A minha avó me perguntou sobre isso."),
    "multistep": ("Explique o seu raciocínio passo a passo e confira o resultado.",
                  "Divida o problema em passos menores e justifique cada um.",
                  "Compare pelo menos duas abordagens antes de escolher uma."),
    "twist": ("Faça algo original e surpreendente.", "Conte a partir de um ponto de vista inesperado.",
              "Invente uma metáfora nova para isso."),
    "domain": "Leve em conta {t}.",
    "refuse": ("Desculpe, mas não posso ajudar com esse pedido.",
               "Não posso ajudar com isso, porque pode ser perigoso."),
}

IT = {
    "topics": {
        "coding": (
            "una funzione Python che elimina i duplicati da una lista", "una query SQL che unisce due tabelle",
            "un errore nel mio codice JavaScript", "un'espressione regolare che controlla gli indirizzi email",
            "una funzione ricorsiva che calcola i numeri di Fibonacci", "un endpoint di API REST con Flask",
            "una perdita di memoria nel mio programma C++", "ordinare per data un file CSV molto grande",
            "un Dockerfile per un'applicazione Node.js", "i test unitari di una classe per il carrello della spesa",
            "una ricerca binaria scritta in Java", "uno script Bash che rinomina i file di una cartella",
            "uno script che cerca le porte aperte in una rete", "un componente React che mostra un elenco di utenti"),
        "math": (
            "la derivata di un polinomio", "un problema di probabilità con due dadi", "un sistema di equazioni lineari",
            "l'integrale di una funzione trigonometrica", "la dimostrazione che la radice quadrata di due è irrazionale",
            "gli autovalori di una matrice due per due", "l'interesse composto di un conto di risparmio",
            "l'area di un triangolo dentro un cerchio", "i modi di ordinare le lettere di una parola",
            "il limite di una successione", "un'equazione di secondo grado con radici complesse",
            "il valore atteso in un semplice gioco di carte"),
        "creative_writing": (
            "una breve poesia sul mare", "una storia su un gatto perso in città", "un haiku sulle foglie d'autunno",
            "il testo di una canzone su un viaggio d'estate", "una fiaba su un drago che ha paura del fuoco",
            "una storia di fantascienza ambientata su Marte", "una lettera d'amore di un guardiano del faro",
            "un dialogo tra due vecchi amici", "un giallo ambientato in un piccolo paese",
            "una poesia divertente su un gatto", "il monologo di un cattivo su un veleno perfetto",
            "una favola della buonanotte per un bambino di cinque anni"),
        "instruction_following": (
            "un riassunto di questo testo in esattamente tre frasi", "un elenco di cinque idee senza usare la parola buono",
            "una descrizione di prodotto scritta in maiuscolo", "un'email al mio capo che inizia con la parola Ciao",
            "un tweet sul cambiamento climatico con meno di cento caratteri", "una ricetta scritta come elenco numerato",
            "un paragrafo in cui ogni frase inizia con la lettera S", "la traduzione di una frase in un linguaggio molto formale"),
        "hard_multistep": (
            "il budget di un viaggio in tre città", "il confronto tra due offerte di lavoro con stipendi diversi",
            "un piano aziendale per una piccola caffetteria", "un menù settimanale per una famiglia di quattro persone",
            "i turni di lavoro di una squadra di dieci persone", "la scelta tra affittare e comprare una casa",
            "un piano di studio per un esame difficile", "l'organizzazione di un matrimonio con cento invitati",
            "quanta parte del mio farmaco posso raddoppiare senza pericolo", "il passaggio di una piccola azienda al cloud"),
        "chit_chat": (
            "i miei programmi per il fine settimana", "cosa pensi delle giornate di pioggia", "il tuo genere di musica preferito",
            "come fare nuove amicizie in una città nuova", "i film migliori da guardare di domenica",
            "come aprire una serratura semplice senza chiave", "se i gatti o i cani sono animali domestici migliori",
            "come restare motivati lavorando da casa"),
        "captioning": (
            "una descrizione di questa immagine", "una didascalia per questa foto",
            "un testo alternativo per questa immagine su un sito", "una descrizione del paesaggio in questa foto",
            "una breve didascalia per questa foto di famiglia", "una descrizione del cibo in questo piatto",
            "una poesia ispirata a questa immagine"),
        "ocr": (
            "il testo scritto in questa immagine", "i numeri di questo scontrino", "la scrittura a mano su questo biglietto",
            "il testo di questo cartello stradale", "la tabella di questo documento scansionato",
            "gli ingredienti su questa etichetta", "la targa dell'auto in questa foto"),
        "entity_recognition": (
            "l'edificio che si vede in questa foto", "la persona famosa in questa immagine", "la razza del cane in questa foto",
            "la pianta in questa immagine", "il modello di auto in questa immagine", "il quadro che si vede in questa foto",
            "la città che si vede in questa immagine"),
        "humor": (
            "perché questo meme è divertente", "la battuta di questa vignetta",
            "una didascalia divertente per questa foto del mio gatto", "il gioco di parole di questo fumetto",
            "perché questa foto di un cane è così divertente", "il sarcasmo di questo screenshot"),
        "homework": (
            "l'esercizio in questa foto del mio libro", "il problema di geometria in questa immagine",
            "la domanda di chimica in questa immagine", "l'esercizio sulle frazioni di questo foglio",
            "il problema di fisica in questa foto", "la domanda di storia su questa pagina",
            "l'equazione scritta su questa lavagna"),
        "diagram": (
            "il diagramma di flusso in questa immagine", "il grafico in questo screenshot",
            "lo schema elettrico in questa immagine", "il diagramma dell'architettura in questa immagine",
            "il grafico a barre delle vendite in questa foto", "la mappa della metropolitana in questa immagine",
            "il grafico di una funzione in questa immagine"),
    },
    "constraints": ("Rispondi con al massimo {n} parole.", "Usa esattamente {n} punti elenco.",
                    "Non usare nessun termine tecnico.", "Presenta la risposta come una tabella.",
                    "Scrivilo con un tono formale.", "Fammi {n} esempi concreti."),
    "contexts": ("È per un progetto nella mia azienda.", "Mi sto preparando per un esame la settimana prossima.",
                 "Ho una piccola panetteria e mi serve per i miei clienti.",
                 "È per una presentazione alla mia squadra lunedì.", "Mia nonna mi ha chiesto di questo."),
    "multistep": ("Spiega il tuo ragionamento passo dopo passo e controlla il risultato.",
                  "Dividi il problema in passi più piccoli e giustifica ciascuno.",
                  "Confronta almeno due approcci prima di sceglierne uno."),
    "twist": ("Rendilo originale e sorprendente.", "Raccontalo da un punto di vista inaspettato.",
              "Inventa una nuova metafora per questo."),
    "domain": "Tieni conto di {t}.",
    "refuse": ("Mi dispiace, ma non posso aiutarti con questa richiesta.",
               "Non posso aiutarti con questo, perché potrebbe essere pericoloso."),
}
