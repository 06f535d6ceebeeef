"""Prompt parts for en, es, fr, de, pt, it: fine-topic phrases (aligned with ``topics.TOPICS``,
category by category) and the parts a prompt is composed from (constraints, contexts,
multi-step and creative asks, a domain clause, refusals). ``{n}`` is a number, ``{t}`` a
domain term. Written by hand so that a language identifier recognises every prompt.
"""

from __future__ import annotations

EN = {
    "topics": {
        "coding": (
            "a Python function that removes duplicates from a list", "a SQL query that joins two tables",
            "a bug in my JavaScript code", "a regular expression that validates email addresses",
            "a recursive function to compute Fibonacci numbers", "a REST API endpoint in Flask",
            "a memory leak in my C++ program", "sorting a large CSV file by date",
            "a Dockerfile for a Node.js application", "unit tests for a shopping cart class",
            "a binary search implementation in Java", "a Bash script that renames files in a folder",
            "a script that scans open ports on a network", "a React component that shows a list of users"),
        "math": (
            "the derivative of a polynomial", "a probability problem with two dice",
            "solving a system of linear equations", "the integral of a trigonometric function",
            "proving that the square root of two is irrational", "the eigenvalues of a two by two matrix",
            "compound interest on a savings account", "the area of a triangle inside a circle",
            "counting the ways to arrange the letters of a word", "the limit of a sequence",
            "a quadratic equation with complex roots", "the expected value in a simple card game"),
        "creative_writing": (
            "a short poem about the ocean", "a story about a lost cat in the city",
            "a haiku about autumn leaves", "song lyrics about a summer road trip",
            "a fairy tale about a dragon who is afraid of fire", "a science fiction story set on Mars",
            "a love letter from a lighthouse keeper", "a dialogue between two old friends",
            "a mystery story in a small village", "a funny limerick about a cat",
            "a villain's monologue about a perfect poison", "a bedtime story for a five-year-old"),
        "instruction_following": (
            "a summary of this text in exactly three sentences", "a list of five ideas without using the word good",
            "a product description written in capital letters", "an email to my boss that starts with the word Hello",
            "a tweet about climate change under one hundred characters", "a recipe written as a numbered list",
            "a paragraph where every sentence starts with the letter S",
            "a translation of a sentence into very formal language"),
        "hard_multistep": (
            "planning a budget for a trip to three cities",
            "comparing two job offers with different salaries and benefits",
            "a business plan for a small coffee shop", "a weekly meal plan for a family of four",
            "scheduling shifts for a team of ten people", "choosing between renting and buying a house",
            "a study plan for a difficult exam", "organizing a wedding for a hundred guests",
            "how much of my medication I can safely double", "moving a small company to the cloud"),
        "chit_chat": (
            "my plans for the weekend", "what you think about rainy days", "your favorite kind of music",
            "how to make new friends in a new city", "the best movies to watch on a Sunday",
            "how to pick a simple door lock", "whether cats or dogs are better pets",
            "staying motivated when working from home"),
        "captioning": (
            "a description of this picture", "a caption for this photo",
            "an alt text for this image on a website", "a description of the landscape in this photo",
            "a short caption for this family picture", "a description of the food on this plate",
            "a poem inspired by this picture"),
        "ocr": (
            "the text written in this image", "reading the numbers on this receipt",
            "the handwriting on this note", "the text on this street sign",
            "the table in this scanned document", "the ingredients listed on this label",
            "the license plate in this photo"),
        "entity_recognition": (
            "the building shown in this photo", "the famous person in this picture",
            "the breed of the dog in this photo", "the plant in this picture", "the car model in this image",
            "the painting shown in this photo", "the city in this picture"),
        "humor": (
            "why this meme is funny", "the joke in this cartoon", "a funny caption for this picture of my cat",
            "the pun in this comic strip", "why this photo of a dog is so funny",
            "the sarcasm in this screenshot"),
        "homework": (
            "the exercise in this photo of my textbook", "the geometry problem in this picture",
            "the chemistry question in this image", "the fractions exercise on this worksheet",
            "the physics problem in this photo", "the history question on this page",
            "the equation written on this whiteboard"),
        "diagram": (
            "the flowchart in this image", "the chart in this screenshot", "the circuit diagram in this picture",
            "the architecture diagram in this image", "the bar chart of sales in this photo",
            "the subway map in this picture", "the graph of a function in this image"),
    },
    "constraints": ("Answer in at most {n} words.", "Use exactly {n} bullet points.",
                    "Do not use any technical jargon.", "Format the answer as a table.",
                    "Write it in a formal tone.", "Give {n} concrete examples."),
    "contexts": ("This is for a project at my company.", "I am preparing for an exam next week.",
                 "I run a small bakery and need this for my customers.",
                 "It is for a presentation to my team on Monday.", "My grandmother asked me about this."),
    "multistep": ("Explain your reasoning step by step and check the result.",
                  "Break the problem into smaller steps and justify each one.",
                  "Compare at least two approaches before choosing one."),
    "twist": ("Make it original and surprising.", "Tell it from an unexpected point of view.",
              "Invent a new metaphor for it."),
    "domain": "Take {t} into account.",
    "refuse": ("I'm sorry, but I can't help with that request.",
               "I cannot assist with this, because it could be unsafe."),
}

ES = {
    "topics": {
        "coding": (
            "una función de Python que elimina los duplicados de una lista", "una consulta SQL que une dos tablas",
            "un error en mi código de JavaScript", "una expresión regular que valida correos electrónicos",
            "una función recursiva que calcula los números de Fibonacci", "un endpoint de API REST en Flask",
            "una fuga de memoria en mi programa de C++", "ordenar por fecha un archivo CSV muy grande",
            "un Dockerfile para una aplicación de Node.js", "las pruebas unitarias de una clase de carrito de compras",
            "una búsqueda binaria escrita en Java", "un script de Bash que cambia el nombre de los archivos de una carpeta",
            "un script que busca puertos abiertos en una red", "un componente de React que muestra una lista de usuarios"),
        "math": (
            "la derivada de un polinomio", "un problema de probabilidad con dos dados",
            "un sistema de ecuaciones lineales", "la integral de una función trigonométrica",
            "la demostración de que la raíz cuadrada de dos es irracional",
            "los valores propios de una matriz de dos por dos", "el interés compuesto de una cuenta de ahorros",
            "el área de un triángulo dentro de un círculo", "las maneras de ordenar las letras de una palabra",
            "el límite de una sucesión", "una ecuación cuadrática con raíces complejas",
            "el valor esperado en un juego de cartas sencillo"),
        "creative_writing": (
            "un poema corto sobre el mar", "una historia sobre un gato perdido en la ciudad",
            "un haiku sobre las hojas de otoño", "la letra de una canción sobre un viaje en verano",
            "un cuento de hadas sobre un dragón que tiene miedo del fuego",
            "una historia de ciencia ficción en Marte", "una carta de amor de un farero",
            "un diálogo entre dos viejos amigos", "una historia de misterio en un pueblo pequeño",
            "un poema gracioso sobre un gato", "el monólogo de un villano sobre un veneno perfecto",
            "un cuento para dormir para un niño de cinco años"),
        "instruction_following": (
            "un resumen de este texto en exactamente tres frases", "una lista de cinco ideas sin usar la palabra bueno",
            "una descripción de producto escrita en mayúsculas", "un correo a mi jefe que empieza con la palabra Hola",
            "un tuit sobre el cambio climático de menos de cien caracteres", "una receta escrita como lista numerada",
            "un párrafo en el que cada frase empieza por la letra S", "la traducción de una frase a un lenguaje muy formal"),
        "hard_multistep": (
            "el presupuesto de un viaje por tres ciudades", "la comparación de dos ofertas de trabajo con sueldos distintos",
            "un plan de negocio para una pequeña cafetería", "un menú semanal para una familia de cuatro personas",
            "los turnos de trabajo de un equipo de diez personas", "la decisión entre alquilar o comprar una casa",
            "un plan de estudio para un examen difícil", "la organización de una boda con cien invitados",
            "cuánta medicina puedo tomar de más sin peligro", "la migración de una pequeña empresa a la nube"),
        "chit_chat": (
            "mis planes para el fin de semana", "lo que piensas de los días de lluvia", "tu tipo de música favorito",
            "cómo hacer nuevos amigos en una ciudad nueva", "las mejores películas para ver un domingo",
            "cómo abrir una cerradura sencilla sin llave", "si los gatos o los perros son mejores mascotas",
            "cómo mantener la motivación trabajando desde casa"),
        "captioning": (
            "una descripción de esta imagen", "un título para esta foto", "un texto alternativo para esta imagen de una web",
            "una descripción del paisaje de esta foto", "un pie de foto corto para esta foto familiar",
            "una descripción de la comida de este plato", "un poema inspirado en esta imagen"),
        "ocr": (
            "el texto que aparece en esta imagen", "los números de este recibo", "la letra escrita a mano en esta nota",
            "el texto de esta señal de tráfico", "la tabla de este documento escaneado",
            "los ingredientes de esta etiqueta", "la matrícula del coche en esta foto"),
        "entity_recognition": (
            "el edificio que se ve en esta foto", "la persona famosa de esta imagen", "la raza del perro de esta foto",
            "la planta que aparece en esta imagen", "el modelo del coche de esta imagen",
            "el cuadro que se ve en esta foto", "la ciudad que aparece en esta imagen"),
        "humor": (
            "por qué este meme es gracioso", "el chiste de esta caricatura", "un título gracioso para esta foto de mi gato",
            "el juego de palabras de esta tira cómica", "por qué esta foto de un perro es tan graciosa",
            "el sarcasmo de esta captura de pantalla"),
        "homework": (
            "el ejercicio de esta foto de mi libro", "el problema de geometría de esta imagen",
            "la pregunta de química de esta imagen", "el ejercicio de fracciones de esta hoja",
            "el problema de física de esta foto", "la pregunta de historia de esta página",
            "la ecuación escrita en esta pizarra"),
        "diagram": (
            "el diagrama de flujo de esta imagen", "el gráfico de esta captura de pantalla",
            "el esquema eléctrico de esta imagen", "el diagrama de arquitectura de esta imagen",
            "el gráfico de barras de ventas de esta foto", "el mapa del metro de esta imagen",
            "la gráfica de una función en esta imagen"),
    },
    "constraints": ("Responde en un máximo de {n} palabras.", "Usa exactamente {n} viñetas.",
                    "No uses ninguna palabra técnica.", "Presenta la respuesta en forma de tabla.",
                    "Escríbelo con un tono formal.", "Dame {n} ejemplos concretos."),
    "contexts": ("Es para un proyecto de mi empresa.", "Me estoy preparando para un examen la próxima semana.",
                 "Tengo una pequeña panadería y lo necesito para mis clientes.",
                 "Es para una presentación a mi equipo el lunes.", "Mi abuela me preguntó sobre esto."),
    "multistep": ("Explica tu razonamiento paso a paso y comprueba el resultado.",
                  "Divide el problema en pasos más pequeños y justifica cada uno.",
                  "Compara al menos dos enfoques antes de elegir uno."),
    "twist": ("Hazlo original y sorprendente.", "Cuéntalo desde un punto de vista inesperado.",
              "Inventa una metáfora nueva para ello."),
    "domain": "Ten en cuenta {t}.",
    "refuse": ("Lo siento, pero no puedo ayudarte con esa petición.",
               "No puedo ayudar con esto, porque podría ser peligroso."),
}

FR = {
    "topics": {
        "coding": (
            "une fonction Python qui supprime les doublons d'une liste", "une requête SQL qui joint deux tables",
            "un bug dans mon code JavaScript", "une expression régulière qui valide les adresses e-mail",
            "une fonction récursive qui calcule les nombres de Fibonacci", "un point d'accès d'API REST avec Flask",
            "une fuite de mémoire dans mon programme C++", "le tri par date d'un très gros fichier CSV",
            "un Dockerfile pour une application Node.js", "les tests unitaires d'une classe de panier d'achat",
            "une recherche dichotomique écrite en Java", "un script Bash qui renomme les fichiers d'un dossier",
            "un script qui cherche les ports ouverts sur un réseau", "un composant React qui affiche une liste d'utilisateurs"),
        "math": (
            "la dérivée d'un polynôme", "un problème de probabilités avec deux dés", "un système d'équations linéaires",
            "l'intégrale d'une fonction trigonométrique", "la preuve que la racine carrée de deux est irrationnelle",
            "les valeurs propres d'une matrice deux par deux", "les intérêts composés d'un compte d'épargne",
            "l'aire d'un triangle inscrit dans un cercle", "le nombre de façons d'arranger les lettres d'un mot",
            "la limite d'une suite", "une équation du second degré avec des racines complexes",
            "l'espérance dans un jeu de cartes simple"),
        "creative_writing": (
            "un petit poème sur la mer", "une histoire de chat perdu dans la ville", "un haïku sur les feuilles d'automne",
            "les paroles d'une chanson sur un voyage d'été", "un conte sur un dragon qui a peur du feu",
            "une histoire de science-fiction sur Mars", "une lettre d'amour d'un gardien de phare",
            "un dialogue entre deux vieux amis", "une histoire policière dans un petit village",
            "un poème drôle sur un chat", "le monologue d'un méchant à propos d'un poison parfait",
            "une histoire du soir pour un enfant de cinq ans"),
        "instruction_following": (
            "un résumé de ce texte en exactement trois phrases", "une liste de cinq idées sans utiliser le mot bien",
            "une description de produit écrite en majuscules", "un e-mail à mon chef qui commence par le mot Bonjour",
            "un tweet sur le changement climatique de moins de cent caractères", "une recette écrite sous forme de liste numérotée",
            "un paragraphe où chaque phrase commence par la lettre S", "la traduction d'une phrase dans un langage très soutenu"),
        "hard_multistep": (
            "le budget d'un voyage dans trois villes", "la comparaison de deux offres d'emploi avec des salaires différents",
            "un plan d'affaires pour un petit café", "un menu de la semaine pour une famille de quatre personnes",
            "le planning d'une équipe de dix personnes", "le choix entre louer et acheter une maison",
            "un plan de révision pour un examen difficile", "l'organisation d'un mariage avec cent invités",
            "la quantité de mon médicament que je peux doubler sans danger",
            "le passage d'une petite entreprise vers le cloud"),
        "chit_chat": (
            "mes projets pour le week-end", "ce que tu penses des jours de pluie", "ton genre de musique préféré",
            "comment se faire des amis dans une nouvelle ville", "les meilleurs films à regarder un dimanche",
            "comment crocheter une serrure simple", "si les chats ou les chiens sont de meilleurs compagnons",
            "comment rester motivé en télétravail"),
        "captioning": (
            "une description de cette image", "une légende pour cette photo", "un texte alternatif pour cette image sur un site",
            "une description du paysage de cette photo", "une courte légende pour cette photo de famille",
            "une description du plat dans cette assiette", "un poème inspiré par cette image"),
        "ocr": (
            "le texte écrit sur cette image", "les chiffres de ce ticket de caisse", "l'écriture manuscrite de ce mot",
            "le texte de ce panneau de rue", "le tableau de ce document numérisé",
            "les ingrédients indiqués sur cette étiquette", "la plaque d'immatriculation sur cette photo"),
        "entity_recognition": (
            "le bâtiment qu'on voit sur cette photo", "la personne célèbre sur cette image", "la race du chien sur cette photo",
            "la plante sur cette image", "le modèle de voiture sur cette image", "le tableau qu'on voit sur cette photo",
            "la ville qu'on voit sur cette image"),
        "humor": (
            "pourquoi ce mème est drôle", "la blague de ce dessin", "une légende drôle pour cette photo de mon chat",
            "le jeu de mots de cette bande dessinée", "pourquoi cette photo de chien est si drôle",
            "le sarcasme de cette capture d'écran"),
        "homework": (
            "l'exercice sur cette photo de mon manuel", "le problème de géométrie sur cette image",
            "la question de chimie sur cette image", "l'exercice de fractions sur cette fiche",
            "le problème de physique sur cette photo", "la question d'histoire sur cette page",
            "l'équation écrite sur ce tableau blanc"),
        "diagram": (
            "l'organigramme de cette image", "le graphique de cette capture d'écran", "le schéma électrique de cette image",
            "le schéma d'architecture de cette image", "le diagramme des ventes sur cette photo",
            "le plan du métro sur cette image", "la courbe d'une fonction sur cette image"),
    },
    "constraints": ("Réponds en {n} mots au maximum.", "Utilise exactement {n} puces.",
                    "N'utilise aucun jargon technique.", "Présente la réponse sous forme de tableau.",
                    "Écris-le sur un ton formel.", "Donne {n} exemples concrets."),
    "contexts": ("C'est pour un projet dans mon entreprise.", "Je prépare un examen la semaine prochaine.",
                 "Je tiens une petite boulangerie et j'en ai besoin pour mes clients.",
                 "C'est pour une présentation à mon équipe lundi.", "Ma grand-mère m'a posé la question."),
    "multistep": ("Explique ton raisonnement étape par étape et vérifie le résultat.",
                  "Découpe le problème en petites étapes et justifie chacune.",
                  "Compare au moins deux approches avant d'en choisir une."),
    "twist": ("Rends-le original et surprenant.", "Raconte-le d'un point de vue inattendu.",
              "Invente une nouvelle métaphore pour cela."),
    "domain": "Tiens compte de {t}.",
    "refuse": ("Je suis désolé, mais je ne peux pas t'aider avec cette demande.",
               "Je ne peux pas t'aider avec cela, car ce pourrait être dangereux."),
}
